"""A frame model without an input projection applies its input activation
itself (with a projection, relu is fused into the projection's clamp)."""

import os
import subprocess

import numpy as np
import pytest
import torch

from converter import convert_state_dict
from converter.reference import ModelConfig
from tests.goldens import build_model

TARN = os.environ.get("TARN_BIN")


@pytest.mark.skipif(not TARN, reason="TARN_BIN is not set: run through ctest")
@pytest.mark.parametrize("activation", ["relu", "gelu", "none"])
def test_unprojected_frames_match_reference(activation, tmp_path):
    config = ModelConfig(d_model=32, num_layers=2, num_heads=2, d_key=16, d_value=16, d_ff=64,
                         input_kind="frames", input_dim=16, stack_window=2, stack_hop=1,
                         input_projection=False, input_activation=activation, output_dim=8)
    model = build_model(config, seed=3, weights="default")
    frames = torch.randn(50, 16)
    expected, _ = model.run_recurrent(frames)
    convert_state_dict(model.state_dict(), config, tmp_path / "model.tarn")
    np.save(tmp_path / "input.npy", frames.numpy())
    result = subprocess.run([TARN, "run", str(tmp_path / "model.tarn"), "--input", str(tmp_path / "input.npy"),
                             "--output", str(tmp_path / "output.npy")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert np.abs(np.load(tmp_path / "output.npy") - expected.numpy()).max() <= 1e-4
