"""What tarn is measured against, built on the reference model's own layers
and weights (converter/reference.py), with the ONNX export of each.

- LinearStep: the reference model's recurrent step (fast-transformers'
  RecurrentEncoder form: S += phi(k) v^T, z += phi(k) per step) as a function
  of its state, (token, position, S, z) -> (logits, S', z'), so that ONNX
  Runtime can run it with the state as inputs and outputs.
- SoftmaxStep: the same layers with softmax attention over a key/value cache
  (the paper's "stateful-softmax"): (token, position, K_0, V_0, K_1, ...) ->
  (logits, k, v). It reads the cache of p positions and returns the new
  position's keys and values [L, H, d]; appending them is the caller's. The
  scores over the cache and the new position's score are joined before the
  softmax, so the cache is read once and never copied.

check_linear/check_softmax compare each with an independent computation
before anything is timed.
"""

import logging
import math
import warnings

import numpy as np
import torch
from torch import nn

from converter.reference import LinearTransformer


class LinearStep(nn.Module):
    def __init__(self, model: LinearTransformer):
        super().__init__()
        if model.config.conv_kernel:
            raise ValueError("LinearStep: models with a convolution are not exported")
        self.model = model

    def forward(self, token, position, S, z):
        """token, position [1] int64; S [L, 1, H, C, d_v]; z [L, 1, H, C]."""
        m = self.model
        x = m.embed(token.unsqueeze(1), position).squeeze(1)
        new_S, new_z = [], []
        for i, layer in enumerate(m.layers):
            S_i, z_i = S[i].clone(), z[i].clone()  # Attention.step adds in place
            x = layer.step(x, S_i, z_i, None)
            new_S.append(S_i)
            new_z.append(z_i)
        return m.output(x), torch.stack(new_S), torch.stack(new_z)


class SoftmaxStep(nn.Module):
    def __init__(self, model: LinearTransformer):
        super().__init__()
        if model.config.conv_kernel:
            raise ValueError("SoftmaxStep: models with a convolution are not supported")
        self.model = model
        self.scale = 1 / math.sqrt(model.config.d_key)

    def _attend(self, attention, h, K, V, keys, values):
        """h [1, d_model]; K [H, p, d_k], V [H, p, d_v]."""
        q = attention._heads(attention.query_projection(h))[0]  # [H, d_k]
        k = attention._heads(attention.key_projection(h))[0]
        v = attention._heads(attention.value_projection(h))[0]  # [H, d_v]
        keys.append(k)
        values.append(v)
        past = torch.matmul(K, q.unsqueeze(2)).squeeze(2)  # [H, p]
        new = (q * k).sum(-1, keepdim=True)  # [H, 1]
        w = torch.softmax(torch.cat([past, new], dim=-1) * self.scale, dim=-1)
        y = torch.matmul(w[:, :-1].unsqueeze(1), V).squeeze(1) + w[:, -1:] * v
        return attention.out_projection(y.reshape(1, -1))

    def forward(self, token, position, *cache):
        m = self.model
        x = m.embed(token.unsqueeze(1), position).squeeze(1)
        keys, values = [], []
        for i, layer in enumerate(m.layers):
            K, V = cache[2 * i], cache[2 * i + 1]
            x = layer._layer(x, lambda h: self._attend(layer.attention, h, K, V, keys, values), None)
        return m.output(x), torch.stack(keys), torch.stack(values)


def softmax_forward(model: LinearTransformer, tokens: torch.Tensor) -> torch.Tensor:
    """The softmax model's parallel causal form over tokens [T]: [T, out]."""
    c = model.config
    x = model.embed(tokens.unsqueeze(0), torch.arange(len(tokens)))
    t = len(tokens)
    mask = torch.ones(t, t, dtype=torch.bool).tril()

    def attend(a, h):
        q, k, v = (a._heads(p(h))[0].transpose(0, 1) for p in (a.query_projection, a.key_projection, a.value_projection))
        scores = (q @ k.transpose(1, 2) / math.sqrt(c.d_key)).masked_fill(~mask, float("-inf"))
        y = (torch.softmax(scores, -1) @ v).transpose(0, 1).reshape(1, t, -1)
        return a.out_projection(y)

    for layer in model.layers:
        x = layer._layer(x, lambda h: attend(layer.attention, h), None)
    return model.output(x)[0]


def linear_inputs(model: LinearTransformer, token: int, position: int, S=None, z=None) -> dict:
    c = model.config
    if S is None:
        S = np.zeros((c.num_layers, 1, c.num_heads, c.feature_dim, c.d_value), np.float32)
        z = np.zeros((c.num_layers, 1, c.num_heads, c.feature_dim), np.float32)
    return {"token": np.array([token], np.int64), "position": np.array([position], np.int64), "S": S, "z": z}


def random_cache(model: LinearTransformer, length: int, seed: int = 0) -> list:
    """Arbitrary keys and values for `length` positions: [K_0, V_0, K_1, ...],
    K_l [H, length, d_k] (its values do not change a step's cost)."""
    c = model.config
    rng = np.random.default_rng(seed)
    cache = []
    for _ in range(c.num_layers):
        for d in (c.d_key, c.d_value):
            cache.append(rng.standard_normal((c.num_heads, length, d), dtype=np.float32))
    return cache


def cache_names(model: LinearTransformer) -> list:
    return [f"{kv}_{i}" for i in range(model.config.num_layers) for kv in ("K", "V")]


def softmax_inputs(model: LinearTransformer, token: int, position: int, cache: list) -> dict:
    feed = {"token": np.array([token], np.int64), "position": np.array([position], np.int64)}
    feed.update(zip(cache_names(model), cache))
    return feed


def export_linear(model: LinearTransformer, path) -> None:
    feed = linear_inputs(model, 1, 3)
    args = tuple(torch.from_numpy(v) for v in feed.values())
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on constant shapes
        torch.onnx.export(
            LinearStep(model).eval(), args, str(path), input_names=list(feed), output_names=["logits", "S_next", "z_next"], opset_version=17
        )


def export_softmax(model: LinearTransformer, path) -> None:
    feed = softmax_inputs(model, 1, 5, random_cache(model, 5))
    args = tuple(torch.from_numpy(v) for v in feed.values())
    names = cache_names(model)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on constant shapes
        torch.onnx.export(
            SoftmaxStep(model).eval(),
            args,
            str(path),
            input_names=list(feed),
            output_names=["logits", "k", "v"],
            dynamic_axes={name: {1: "past"} for name in names},
            opset_version=17,
        )


@torch.no_grad()
def check_linear(model: LinearTransformer, run_onnx, tokens) -> float:
    """Steps `tokens` with the reference model's step() and with the ONNX
    graph (run_onnx(feed) -> outputs); the largest difference of the logits
    and the final state."""
    state = model.initial_state(1)
    S = z = None
    worst = 0.0
    for position, token in enumerate(tokens):
        expected = model.step(torch.tensor([token]), state).numpy()
        logits, S, z = run_onnx(linear_inputs(model, token, position, S, z))
        worst = max(worst, float(np.abs(logits - expected).max()))
    worst = max(worst, float(np.abs(S - state["S"].numpy()).max()), float(np.abs(z - state["z"].numpy()).max()))
    return worst


@torch.no_grad()
def check_softmax(model: LinearTransformer, run_onnx, tokens) -> dict:
    """The softmax model's parallel causal form against SoftmaxStep stepped
    with a growing cache, eagerly and through the ONNX graph; the largest
    difference of the logits for each."""
    expected = softmax_forward(model, torch.tensor(tokens)).numpy()
    step = SoftmaxStep(model).eval()
    c = model.config
    cache = [np.zeros((c.num_heads, 0, d), np.float32) for _ in range(c.num_layers) for d in (c.d_key, c.d_value)]
    worst = {"eager": 0.0, "onnx": 0.0}
    for position, token in enumerate(tokens):
        feed = softmax_inputs(model, token, position, cache)
        logits, k, v = (t.numpy() for t in step(*(torch.from_numpy(x) for x in feed.values())))
        worst["eager"] = max(worst["eager"], float(np.abs(logits[0] - expected[position]).max()))
        if run_onnx is not None and position > 0:  # ONNX Runtime refuses empty inputs
            onnx_logits = run_onnx(feed)[0]
            worst["onnx"] = max(worst["onnx"], float(np.abs(onnx_logits[0] - expected[position]).max()))
        for i in range(c.num_layers):
            cache[2 * i] = np.concatenate([cache[2 * i], k[i][:, None]], axis=1)
            cache[2 * i + 1] = np.concatenate([cache[2 * i + 1], v[i][:, None]], axis=1)
    return worst



def reduced_precision_exports(f32_path, directory) -> dict:
    """ONNX Runtime's own smaller forms of the exported linear step, made by
    its own tools: {"ort_f16": every tensor and op in float16
    (convert_float_to_float16, inputs and outputs kept float32), "ort_int8":
    weights int8 and activations quantised per step (quantize_dynamic)}.
    Needs the onnx package; returns {} without it."""
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from onnxruntime.transformers.float16 import convert_float_to_float16
    except ImportError:
        return {}
    from pathlib import Path

    f16 = Path(directory) / (Path(f32_path).stem + "-f16.onnx")
    int8 = Path(directory) / (Path(f32_path).stem + "-int8.onnx")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # quantize_dynamic's advice on pre-processing
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            onnx.save(convert_float_to_float16(onnx.load(str(f32_path)), keep_io_types=True), str(f16))
            quantize_dynamic(str(f32_path), str(int8), weight_type=QuantType.QInt8)
    finally:
        root.setLevel(level)
    return {"ort_f16": f16, "ort_int8": int8}
