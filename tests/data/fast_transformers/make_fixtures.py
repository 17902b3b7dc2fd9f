#!/usr/bin/env python3
"""Make golden fixtures from the real fast-transformers library.

For each case this writes, under <out>/<case>/:

  model.pt      state_dict() of a fast_transformers TransformerEncoderBuilder
                model (torch.save, zip format, tensors only)
  config.json   every hyper-parameter the state_dict lacks (see README.md)
  input.npy     float32 [T, d_model], seeded N(0, 1)
  output.npy    float32 [T, d_model]
                  causal cases: RecurrentEncoderBuilder model with the same
                  weights, stepped one position at a time (batch 1)
                  bidirectional case: TransformerEncoder over the whole input
  state_S.npy   float32 [layers, heads, C, d_v]  final recurrent state (causal)
  state_z.npy   float32 [layers, heads, C]       final recurrent state (causal)

fast-transformers must be importable (on PYTHONPATH) with its CPU extensions
built: its builders import every attention module, and those import the
compiled extensions. This script does not fetch or build it.

Checks made while generating (printed; a failure raises):
  * causal: the non-recurrent TransformerEncoder with a TriangularCausalMask
    (CausalLinearAttention, the causal_product CPU extension) agrees with the
    recurrent outputs (skipped with a note if the extension is unavailable;
    for the Favor stabilize=True case the two forms are *expected* to differ,
    see README.md, and the difference is only reported);
  * Favor: the recurrent model uses exactly the saved omega, and a second
    recurrent run gives bit-identical outputs (no redraw);
  * an independent float64 NumPy re-implementation of the semantics, reading
    only model.pt + config.json, reproduces output.npy and the states.

Usage (FAST_TRANSFORMERS: a checkout of fast-transformers, built):
  PYTHONPATH="$FAST_TRANSFORMERS" OMP_WAIT_POLICY=PASSIVE \\
      python3 make_fixtures.py [--out DIR] [--cases a,b,...]
"""

import argparse
import json
import math
import os
import subprocess
import sys

import numpy as np
import torch

from fast_transformers.builders import (RecurrentEncoderBuilder,
                                        TransformerEncoderBuilder)
from fast_transformers.feature_maps import ActivationFunctionFeatureMap, Favor
from fast_transformers.masking import TriangularCausalMask

T = 300
N_LAYERS = 2
N_HEADS = 4
D_QUERY = 16
D_VALUE = 16
D_MODEL = N_HEADS * D_VALUE
D_FF = 128
FAVOR_N_DIMS = 32
LAYER_NORM_EPS = 1e-5   # torch.nn.LayerNorm default; builders do not set it
ATTENTION_EPS = 1e-6    # Linear/CausalLinear/RecurrentLinearAttention default;
                        # the attention registry does not expose it

# name -> (seed, attention_type, activation, feature map config)
CASES = {
    "causal_linear": dict(seed=1, attention_type="causal-linear",
                          activation="relu",
                          feature_map={"name": "elu+1"}),
    "causal_relu": dict(seed=2, attention_type="causal-linear",
                        activation="gelu",
                        feature_map={"name": "relu"}),
    "causal_favor": dict(seed=3, attention_type="causal-linear",
                         activation="relu",
                         feature_map={"name": "favor", "n_dims": FAVOR_N_DIMS,
                                      "stabilize": False}),
    "causal_favor_stabilize": dict(seed=4, attention_type="causal-linear",
                                   activation="relu",
                                   feature_map={"name": "favor",
                                                "n_dims": FAVOR_N_DIMS,
                                                "stabilize": True}),
    "linear": dict(seed=5, attention_type="linear", activation="relu",
                   feature_map={"name": "elu+1"}),
}


def relu_feature(x):
    return torch.relu(x)


def feature_map_factory(fm):
    """Return (factory or None, resolved feature-map config)."""
    name = fm["name"]
    if name == "elu+1":
        # fast_transformers.feature_maps.elu_feature_map, the default
        return None, {"name": "elu+1", "feature_dim": D_QUERY}
    if name == "relu":
        return (ActivationFunctionFeatureMap.factory(relu_feature),
                {"name": "relu", "feature_dim": D_QUERY})
    if name == "favor":
        softmax_temp = 1.0 / math.sqrt(D_QUERY)  # Favor's default, made explicit
        factory = Favor.factory(n_dims=fm["n_dims"],
                                softmax_temp=softmax_temp,
                                orthogonal=True,
                                stabilize=fm["stabilize"],
                                redraw=1,
                                deterministic_eval=True)
        return factory, {
            "name": "favor",
            "feature_dim": fm["n_dims"],
            "n_dims": fm["n_dims"],
            "omega_shape": [D_QUERY, fm["n_dims"] // 2],
            "softmax_temp": softmax_temp,
            "stabilize": fm["stabilize"],
            "orthogonal": True,
            "redraw": 1,
            "deterministic_eval": True,
        }
    raise ValueError(name)


def builder_kwargs(case, factory):
    kw = dict(
        n_layers=N_LAYERS,
        n_heads=N_HEADS,
        query_dimensions=D_QUERY,
        value_dimensions=D_VALUE,
        feed_forward_dimensions=D_FF,
        attention_type=case["attention_type"],
        activation=case["activation"],
        final_normalization=True,
        dropout=0.0,
        attention_dropout=0.0,
    )
    if factory is not None:
        kw["feature_map"] = factory
    return kw


def feature_maps_of(model):
    return [layer.attention.inner_attention.feature_map
            for layer in model.layers]


def fast_transformers_commit():
    import fast_transformers
    root = os.path.dirname(os.path.dirname(fast_transformers.__file__))
    try:
        return subprocess.check_output(
            ["git", "-C", root, "rev-parse", "HEAD"],
            stderr=subprocess.DEVNULL, text=True).strip()
    except Exception:
        return "unknown"


# ---------------------------------------------------------------------------
# Independent float64 NumPy re-implementation (reads model.pt + config.json)
# ---------------------------------------------------------------------------

def np_layer_norm(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def np_gelu(x):
    erf = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def np_phi(x, cfg, omega):
    """x: [..., H, d_k] -> [..., H, C]; the leading axis of a [T, H, d_k]
    input is time (bidirectional), of a [H, d_k] input is heads (one step)."""
    fm = cfg["feature_map"]
    if fm["name"] == "elu+1":
        return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))
    if fm["name"] == "relu":
        return np.maximum(x, 0.0)
    x = x * math.sqrt(fm["softmax_temp"])
    sq = (x * x).sum(-1, keepdims=True)
    u = x @ omega
    offset = 0.5 * sq + 0.5 * math.log(fm["n_dims"])
    if fm["stabilize"]:
        # fast-transformers takes the max over dim 1 of the norms. One step of
        # the recurrent form has shape (N, H, D): dim 1 is the heads.
        assert x.ndim == 2
        offset = offset + sq.max(0, keepdims=True)
    return np.concatenate([np.exp(u - offset), np.exp(-u - offset)], -1)


def np_reference(sd, cfg, x):
    p = {k: v.double().numpy() for k, v in sd.items()}
    H, dk, dv = cfg["n_heads"], cfg["query_dimensions"], cfg["value_dimensions"]
    eps_ln, eps_at = cfg["layer_norm_eps"], cfg["attention_eps"]
    act = np_gelu if cfg["activation"] == "gelu" else (
        lambda v: np.maximum(v, 0.0))
    x = x.astype(np.float64)
    Tn = x.shape[0]
    states_S, states_z = [], []
    for L in range(cfg["n_layers"]):
        pre = "layers.%d." % L
        lin = lambda v, n: v @ p[pre + n + ".weight"].T + p[pre + n + ".bias"]
        q = lin(x, "attention.query_projection").reshape(Tn, H, dk)
        k = lin(x, "attention.key_projection").reshape(Tn, H, dk)
        v = lin(x, "attention.value_projection").reshape(Tn, H, dv)
        omega = p.get(pre + "attention.inner_attention.feature_map.omega")
        if cfg["causal"]:
            C = cfg["feature_map"]["feature_dim"]
            S = np.zeros((H, C, dv))
            z = np.zeros((H, C))
            y = np.zeros((Tn, H, dv))
            for i in range(Tn):
                fq, fk = np_phi(q[i], cfg, omega), np_phi(k[i], cfg, omega)
                S += fk[:, :, None] * v[i][:, None, :]
                z += fk
                num = np.einsum("hc,hcm->hm", fq, S)
                den = np.einsum("hc,hc->h", fq, z) + eps_at
                y[i] = num / den[:, None]
            states_S.append(S)
            states_z.append(z)
        else:
            fq, fk = np_phi(q, cfg, omega), np_phi(k, cfg, omega)
            S = np.einsum("thc,thm->hcm", fk, v)
            z = fk.sum(0)
            num = np.einsum("thc,hcm->thm", fq, S)
            den = np.einsum("thc,hc->th", fq, z) + eps_at
            y = num / den[:, :, None]
        a = lin(y.reshape(Tn, H * dv), "attention.out_projection")
        x = np_layer_norm(x + a, p[pre + "norm1.weight"], p[pre + "norm1.bias"],
                          eps_ln)
        f = lin(act(lin(x, "linear1")), "linear2")
        x = np_layer_norm(x + f, p[pre + "norm2.weight"], p[pre + "norm2.bias"],
                          eps_ln)
    if cfg["final_normalization"]:
        x = np_layer_norm(x, p["norm.weight"], p["norm.bias"], eps_ln)
    return x, states_S, states_z


# ---------------------------------------------------------------------------

def run_recurrent(model_r, x):
    outs, state = [], None
    with torch.no_grad():
        for i in range(x.shape[0]):
            y, state = model_r(x[i:i + 1], state=state)
            outs.append(y[0].clone())
    return torch.stack(outs), state


def make_case(name, case, out_dir, meta):
    print("=" * 72)
    print("case", name)
    torch.manual_seed(case["seed"])
    factory, fm_cfg = feature_map_factory(case["feature_map"])
    kw = builder_kwargs(case, factory)
    model = TransformerEncoderBuilder.from_kwargs(**kw).get()

    # Give the LayerNorms non-trivial affine parameters so that a converter
    # that swaps or drops weight/bias is caught (default init is 1 / 0).
    with torch.no_grad():
        for n, prm in model.named_parameters():
            if "norm" in n and n.endswith(".weight"):
                prm.copy_(1.0 + 0.2 * torch.randn_like(prm))
            elif "norm" in n and n.endswith(".bias"):
                prm.copy_(0.2 * torch.randn_like(prm))

    # Favor: omega is a zero buffer until new_feature_map() draws it, and with
    # deterministic_eval=True it is only (re)drawn in training mode. Draw it
    # once here, in training mode, then freeze by switching to eval.
    if fm_cfg["name"] == "favor":
        model.train()
        for fmap in feature_maps_of(model):
            fmap.new_feature_map(torch.device("cpu"))
            assert fmap.omega.abs().sum() > 0
    model.eval()

    sd = {k: v.detach().clone().contiguous() for k, v in
          model.state_dict().items()}
    causal = case["attention_type"] == "causal-linear"
    cfg = {
        "source": "fast-transformers",
        "fast_transformers_commit": meta["commit"],
        "torch_version": torch.__version__,
        "builder": "TransformerEncoderBuilder",
        "recurrent_builder": "RecurrentEncoderBuilder" if causal else None,
        "attention_type": case["attention_type"],
        "causal": causal,
        "n_layers": N_LAYERS,
        "n_heads": N_HEADS,
        "query_dimensions": D_QUERY,
        "value_dimensions": D_VALUE,
        "d_model": D_MODEL,
        "feed_forward_dimensions": D_FF,
        "activation": case["activation"],
        "final_normalization": True,
        "norm_placement": "post",
        "layer_norm_eps": LAYER_NORM_EPS,
        "attention_eps": ATTENTION_EPS,
        "feature_map": fm_cfg,
        "dropout": 0.0,
        "seed": case["seed"],
        "T": T,
        "files": {
            "input.npy": [T, D_MODEL],
            "output.npy": [T, D_MODEL],
        },
        "state_dict": {k: list(v.shape) for k, v in sd.items()},
    }
    if causal:
        C = fm_cfg["feature_dim"]
        cfg["files"]["state_S.npy"] = [N_LAYERS, N_HEADS, C, D_VALUE]
        cfg["files"]["state_z.npy"] = [N_LAYERS, N_HEADS, C]

    print("state_dict keys:")
    for k, v in sd.items():
        print("  %-58s %s" % (k, list(v.shape)))

    rng = np.random.default_rng(1000 + case["seed"])
    x_np = rng.standard_normal((T, D_MODEL)).astype(np.float32)
    x = torch.from_numpy(x_np)

    os.makedirs(out_dir, exist_ok=True)
    torch.save(sd, os.path.join(out_dir, "model.pt"))
    np.save(os.path.join(out_dir, "input.npy"), x_np)

    if causal:
        model_r = RecurrentEncoderBuilder.from_kwargs(**kw).get()
        model_r.load_state_dict(sd)
        model_r.eval()
        y_r, state = run_recurrent(model_r, x)
        y_r2, _ = run_recurrent(model_r, x)
        assert torch.equal(y_r, y_r2), "second recurrent run differs"
        if fm_cfg["name"] == "favor":
            for L, fmap in enumerate(feature_maps_of(model_r)):
                key = "layers.%d.attention.inner_attention.feature_map.omega" % L
                assert torch.equal(fmap.omega, sd[key]), "omega was redrawn"
            print("favor: recurrent model uses the saved omega; "
                  "second run bit-identical")
        S = torch.stack([s[0][0] for s in state]).numpy().astype(np.float32)
        z = torch.stack([s[1][0] for s in state]).numpy().astype(np.float32)
        output = y_r.numpy().astype(np.float32)
        np.save(os.path.join(out_dir, "state_S.npy"), S)
        np.save(os.path.join(out_dir, "state_z.npy"), z)

        # Cross-check against the parallel (non-recurrent) causal form.
        try:
            with torch.no_grad():
                y_p = model(x[None], attn_mask=TriangularCausalMask(T))[0]
            d = (y_p - y_r).abs().max().item()
            cfg["crosscheck_parallel_causal_max_abs"] = d
            if fm_cfg.get("stabilize"):
                print("parallel TransformerEncoder (TriangularCausalMask) vs "
                      "recurrent: max abs diff %.3e (EXPECTED to differ: the "
                      "stabiliser is a max over the sequence in the parallel "
                      "form and over heads in the recurrent one)" % d)
            else:
                print("parallel TransformerEncoder (TriangularCausalMask) vs "
                      "recurrent: max abs diff %.3e" % d)
                assert d < 1e-4, d
        except (ImportError, AttributeError, TypeError) as e:
            print("note: causal_product CPU extension unavailable (%s); "
                  "skipping the parallel cross-check" % e)
    else:
        with torch.no_grad():
            output = model(x[None])[0].numpy().astype(np.float32)
        S = z = None

    np.save(os.path.join(out_dir, "output.npy"), output)

    # Independent NumPy check, from the saved files only.
    sd2 = torch.load(os.path.join(out_dir, "model.pt"))
    ref, rS, rz = np_reference(sd2, cfg, x_np)
    d = float(np.abs(ref - output).max())
    cfg["crosscheck_numpy_float64_max_abs"] = d
    msg = "numpy float64 re-implementation vs golden: max abs diff %.3e" % d
    if causal:
        dS = float(np.abs(np.stack(rS) - S).max() / max(1.0, np.abs(S).max()))
        dz = float(np.abs(np.stack(rz) - z).max() / max(1.0, np.abs(z).max()))
        cfg["crosscheck_numpy_state_max_rel"] = max(dS, dz)
        msg += "; states max rel diff S %.3e z %.3e" % (dS, dz)
        assert dS < 1e-4 and dz < 1e-4
    print(msg)
    assert d < 1e-4, d

    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")

    for fn in sorted(os.listdir(out_dir)):
        print("  %-14s %8d bytes" % (fn, os.path.getsize(
            os.path.join(out_dir, fn))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args()
    torch.set_num_threads(1)
    meta = {"commit": fast_transformers_commit()}
    print("fast-transformers commit", meta["commit"])
    print("torch", torch.__version__, "numpy", np.__version__)
    for name in args.cases.split(","):
        make_case(name, CASES[name], os.path.join(args.out, name), meta)


if __name__ == "__main__":
    sys.exit(main())
