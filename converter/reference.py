"""tarn's PyTorch reference model: the readable definition of docs/design.md §1.

It trains the examples and produces every golden output the runtime is tested
against. Two forms of one model:
  forward(inputs)         whole sequences, causal attention in its parallel
                          (quadratic, masked) form: for training;
  step(input, state)      one token or frame at a time, attention as the
                          recurrence S += phi(k) v^T, z += phi(k): the RNN form
                          the runtime implements.
State-dict names are the tensor names of a .tarn file (schema/tarn.fbs); the
encoder part is named like fast-transformers' TransformerEncoder.
"""

import math
from typing import List, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

try:
    from .config import ModelConfig  # re-exported: the reference model's configuration
except ImportError:  # loaded on its own, by path (examples/asr/train.py)
    from config import ModelConfig


def activate(x: torch.Tensor, name: str) -> torch.Tensor:
    if name == "relu":
        return F.relu(x)
    if name == "gelu":
        return F.gelu(x)
    return x


def sinusoid(positions: torch.Tensor, d_model: int) -> torch.Tensor:
    """pe[p, 2i] = sin(p / 10000^(2i/d)), pe[p, 2i+1] = cos(same); [T, d_model]."""
    i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angle = positions.to(torch.float64)[:, None] / torch.pow(10000.0, i / d_model)
    pe = torch.zeros(len(positions), d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe.to(torch.float32)


def logistic_mixture_levels(params: np.ndarray, levels: int) -> np.ndarray:
    """P(level k) for k in [0, levels) under a discretised mixture of logistics,
    the distribution the paper authors' image model samples from; float64.

    params [..., 3M] = [M mixture logits | M means | M scale parameters],
    scale = elu(p) + 1.0001. Their sampler draws a component by its softmax
    weight, x ~ logistic(mean, scale), and takes the level
    round((x + 1) / 2 * (levels - 1)) clamped to [0, levels - 1]. So level k
    holds x in [c_k - h, c_k + h), c_k = 2k / (levels - 1) - 1,
    h = 1 / (levels - 1), the first level reaching down to -inf and the last
    up to +inf. Returns [..., levels]."""
    params = np.asarray(params, dtype=np.float64)
    m = params.shape[-1] // 3
    logits, means, raw = params[..., :m], params[..., m : 2 * m], params[..., 2 * m :]
    weights = np.exp(logits - logits.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    scales = np.where(raw > 0, raw, np.expm1(np.minimum(raw, 0))) + 1.0001
    edges = (2 * np.arange(1, levels) - 1) / (levels - 1) - 1  # level k starts at edges[k-1]
    t = (edges[:, None] - means[..., None, :]) / scales[..., None, :]  # [..., levels-1, M]
    shape = t.shape[:-2] + (1, m)
    lower = np.concatenate([np.full(shape, -np.inf), t], axis=-2)  # level k's edges, standardised
    upper = np.concatenate([t, np.full(shape, np.inf)], axis=-2)

    def sigmoid(x):
        return np.exp(-np.logaddexp(0, -x))

    # sigmoid(b) - sigmoid(a) = sigmoid(b) sigmoid(-a) (1 - exp(a - b)): no
    # difference of two CDFs near 1 (a difference keeps no P below 1e-16
    # in the upper tail), exact at the infinite ends. Both ends one infinity
    # (an infinite mean): an empty interval.
    with np.errstate(invalid="ignore"):  # inf - inf, replaced
        width = np.where(lower == upper, 0.0, lower - upper)
    p = sigmoid(upper) * sigmoid(-lower) * -np.expm1(width)
    return (p * weights[..., None, :]).sum(-1)


class FeatureMap(nn.Module):
    """phi applied to the last dimension (d_key) of queries and keys."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.kind = config.feature_map
        if self.kind == "favor+":
            self.softmax_temp = config.favor_softmax_temp
            self.stabilize = config.favor_stabilize
            # Positive random features as fast-transformers' Favor: a fixed
            # [d_key, C/2] matrix, drawn once and stored in the model.
            self.register_buffer("omega", torch.randn(config.d_key, config.feature_dim // 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [..., H, d_key]
        if self.kind == "elu+1":
            return F.elu(x) + 1
        if self.kind == "relu":
            return F.relu(x)
        x = x * math.sqrt(self.softmax_temp)
        norm_sq = torch.einsum("...d,...d->...", x, x).unsqueeze(-1)
        u = x @ self.omega
        offset = 0.5 * norm_sq + 0.5 * math.log(2 * self.omega.shape[1])
        if self.stabilize:  # max over heads, as fast-transformers' recurrent form
            offset = offset + norm_sq.max(dim=-2, keepdim=True)[0]
        return torch.cat([torch.exp(u - offset), torch.exp(-u - offset)], dim=-1)


class Attention(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        c = config
        self.num_heads, self.eps, self.causal = c.num_heads, c.attention_eps, c.attention == "causal"
        self.query_projection = nn.Linear(c.d_model, c.num_heads * c.d_key)
        self.key_projection = nn.Linear(c.d_model, c.num_heads * c.d_key)
        self.value_projection = nn.Linear(c.d_model, c.num_heads * c.d_value)
        self.out_projection = nn.Linear(c.num_heads * c.d_value, c.d_model)
        self.feature_map = FeatureMap(c)

    def _heads(self, x):  # [B, T, H*d] -> [B, T, H, d]
        return x.view(*x.shape[:-1], self.num_heads, -1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, T, d_model]
        q = self.feature_map(self._heads(self.query_projection(x)))
        k = self.feature_map(self._heads(self.key_projection(x)))
        v = self._heads(self.value_projection(x))
        if self.causal:  # parallel form: (phi_q phi_k^T masked to j <= i) v
            scores = torch.einsum("bihc,bjhc->bhij", q, k)
            t = x.shape[1]
            scores = scores * torch.tril(torch.ones(t, t, dtype=x.dtype, device=x.device))
            numerator = torch.einsum("bhij,bjhd->bihd", scores, v)
            denominator = scores.sum(-1).transpose(1, 2).unsqueeze(-1)  # [B, T, H, 1]
        else:
            kv = torch.einsum("bjhc,bjhd->bhcd", k, v)
            numerator = torch.einsum("bihc,bhcd->bihd", q, kv)
            denominator = torch.einsum("bihc,bhc->bih", q, k.sum(1)).unsqueeze(-1)
        y = numerator / (denominator + self.eps)
        return self.out_projection(y.flatten(-2))

    def step(self, x: torch.Tensor, S: torch.Tensor, z: torch.Tensor):
        """x [B, d_model]; S [B, H, C, d_v], z [B, H, C] updated in place."""
        q = self.feature_map(self._heads(self.query_projection(x)))
        k = self.feature_map(self._heads(self.key_projection(x)))
        v = self._heads(self.value_projection(x))
        S += torch.einsum("bhc,bhd->bhcd", k, v)
        z += k
        numerator = torch.einsum("bhc,bhcd->bhd", q, S)
        denominator = torch.einsum("bhc,bhc->bh", q, z).unsqueeze(-1)
        return self.out_projection((numerator / (denominator + self.eps)).flatten(-2))


class CausalDepthwiseConv(nn.Module):
    """y_t[c] = b[c] + sum_j w[c, j] * x_{t-k+1+j}[c], zero history before t = 0.

    Written as a sum of shifted copies (no nn.Conv1d: its weight gradient is
    wrong in Debian's torch 1.13 build for some strides)."""

    def __init__(self, d_model: int, kernel: int):
        super().__init__()
        self.kernel = kernel
        self.weight = nn.Parameter(torch.randn(d_model, kernel) / math.sqrt(kernel))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # [B, T, d]
        t = x.shape[1]
        padded = F.pad(x, (0, 0, self.kernel - 1, 0))
        y = self.bias.expand_as(x)
        for j in range(self.kernel):
            y = y + padded[:, j : j + t, :] * self.weight[:, j]
        return y

    def step(self, x: torch.Tensor, history: torch.Tensor) -> torch.Tensor:
        """x [B, d]; history [B, k-1, d] (oldest first), shifted in place."""
        window = torch.cat([history, x.unsqueeze(1)], dim=1)  # [B, k, d]
        history.copy_(window[:, 1:, :])
        return self.bias + torch.einsum("bjd,dj->bd", window, self.weight)


class EncoderLayer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        c = config
        self.pre_norm, self.activation = c.norm_placement == "pre", c.activation
        self.attention = Attention(c)
        self.conv = CausalDepthwiseConv(c.d_model, c.conv_kernel) if c.conv_kernel else None
        self.linear1 = nn.Linear(c.d_model, c.d_ff)
        self.linear2 = nn.Linear(c.d_ff, c.d_model)
        self.norm1 = nn.LayerNorm(c.d_model, eps=c.norm_eps)
        self.norm2 = nn.LayerNorm(c.d_model, eps=c.norm_eps)

    def _ffn(self, x):
        return self.linear2(activate(self.linear1(x), self.activation))

    def _layer(self, x, attend, convolve):
        """The one definition of a layer; attend/convolve are parallel or recurrent."""
        if self.pre_norm:
            x = x + attend(self.norm1(x))
        else:
            x = self.norm1(x + attend(x))
        if self.conv is not None:
            x = x + convolve(x)
        if self.pre_norm:
            return x + self._ffn(self.norm2(x))
        return self.norm2(x + self._ffn(x))

    def forward(self, x):
        return self._layer(x, self.attention, self.conv)

    def step(self, x, S, z, history):
        return self._layer(
            x,
            lambda h: self.attention.step(h, S, z),
            lambda h: self.conv.step(h, history),
        )


class LinearTransformer(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        c = self.config = config
        if c.input_kind == "tokens":
            self.token_embedding = nn.Embedding(c.vocab_size, c.embedding_dim)
        elif c.input_projection:
            self.input_projection = nn.Linear(c.stacked_dim, c.d_model)
        if c.position == "learned":
            self.position_embedding = nn.Embedding(c.max_positions, c.d_model)
        self.layers = nn.ModuleList(EncoderLayer(c) for _ in range(c.num_layers))
        self.norm = nn.LayerNorm(c.d_model, eps=c.norm_eps) if c.final_norm else None
        self.head = nn.Linear(c.d_model, c.output_dim) if c.output_dim else None

    # -- input -------------------------------------------------------------
    def stack_frames(self, frames: torch.Tensor) -> torch.Tensor:
        """[B, T, input_dim] -> [B, steps, window*input_dim], oldest frame
        first; step s covers frames [s*hop, s*hop + window)."""
        c = self.config
        windows = frames.unfold(1, c.stack_window, c.stack_hop)  # [B, S, d, w]
        return windows.transpose(2, 3).flatten(2)

    def embed(self, inputs: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """tokens [B, T] or stacked frames [B, T, stacked_dim] -> [B, T, d_model]."""
        c = self.config
        if c.input_kind == "tokens":
            x = self.token_embedding(inputs) * c.embedding_scale
        elif c.input_projection:
            x = activate(self.input_projection(inputs), c.input_activation)
        else:
            x = activate(inputs, c.input_activation)
        if c.position_concat_dim:
            pe = sinusoid(positions, c.position_concat_dim).to(x.device)
            x = torch.cat([x, pe.expand(*x.shape[:-1], -1)], dim=-1)
        elif c.position == "sinusoidal":
            x = x + sinusoid(positions, c.d_model).to(x.device)
        elif c.position == "learned":
            x = x + self.position_embedding(positions)
        return x

    def output(self, x: torch.Tensor) -> torch.Tensor:
        if self.norm is not None:
            x = self.norm(x)
        return self.head(x) if self.head is not None else x

    # -- parallel form -----------------------------------------------------
    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        """tokens [B, T] (long) or frames [B, T_frames, input_dim] -> [B, steps, out]."""
        if self.config.input_kind == "frames":
            inputs = self.stack_frames(inputs)
        x = self.embed(inputs, torch.arange(inputs.shape[1], device=inputs.device))
        for layer in self.layers:
            x = layer(x)
        return self.output(x)

    # -- recurrent form ----------------------------------------------------
    def initial_state(self, batch: int = 1) -> dict:
        c = self.config
        k = max(c.conv_kernel - 1, 0)
        return {
            "position": 0,
            "S": torch.zeros(c.num_layers, batch, c.num_heads, c.feature_dim, c.d_value),
            "z": torch.zeros(c.num_layers, batch, c.num_heads, c.feature_dim),
            "conv": torch.zeros(c.num_layers, batch, k, c.d_model),
        }

    @torch.no_grad()
    def step(self, inputs: torch.Tensor, state: dict) -> torch.Tensor:
        """One step: tokens [B] or stacked frames [B, stacked_dim] -> [B, out]."""
        if self.config.attention != "causal":
            raise ValueError("a bidirectional model cannot be stepped")
        position = torch.tensor([state["position"]])
        x = self.embed(inputs.unsqueeze(1), position).squeeze(1)
        for i, layer in enumerate(self.layers):
            x = layer.step(x, state["S"][i], state["z"][i], state["conv"][i])
        state["position"] += 1
        return self.output(x)

    @torch.no_grad()
    def run_recurrent(self, inputs: torch.Tensor, state: Optional[dict] = None):
        """Steps a single sequence (tokens [T] or frames [T_frames, input_dim])
        one position at a time; returns ([steps, out], final state)."""
        state = state or self.initial_state(1)
        if self.config.input_kind == "frames":
            inputs = self.stack_frames(inputs.unsqueeze(0)).squeeze(0)
        outputs: List[torch.Tensor] = [self.step(row.unsqueeze(0), state) for row in inputs]
        return torch.cat(outputs), state
