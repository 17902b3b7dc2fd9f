"""Where the generated FlatBuffers code comes from: flatc, run on demand."""

import os
import shutil
import subprocess
import sys

import pytest
import torch

import converter.schema_code as schema_code
from converter import ConversionError, read_tarn

from converter_testing import REPO_ROOT

needs_flatc = pytest.mark.skipif(shutil.which("flatc") is None, reason="flatc not installed")


@needs_flatc
@pytest.mark.parametrize("layout", [["--python"], ["--python", "--gen-onefile"]], ids=["package", "onefile"])
def test_build_generated_code_is_used(tmp_path, layout, small_config, small_state_dict):
    """TARN_FLATC_PYTHON_OUT: the build's flatc output (CMake generates the
    package layout) is imported instead of the cache."""
    out = tmp_path / "generated"
    subprocess.run(["flatc", *layout, "-o", str(out), str(schema_code.SCHEMA_PATH)], check=True)
    checkpoint, model = tmp_path / "model.pt", tmp_path / "m.tarn"
    torch.save({"state_dict": small_state_dict, "config": small_config.to_dict()}, checkpoint)
    code = f"from converter import convert_file, schema_code; convert_file({str(checkpoint)!r}, {str(model)!r}); print(schema_code.schema().origin)"
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "TARN_FLATC_PYTHON_OUT": str(out)},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith(str(out))
    assert read_tarn(model).config == small_config


def test_empty_build_directory_is_an_error(tmp_path):
    with pytest.raises(ConversionError, match="no flatc Python output in"):
        schema_code._load(tmp_path)


@needs_flatc
def test_cache_follows_the_schema_content(tmp_path, monkeypatch):
    schema = tmp_path / "tarn.fbs"
    schema.write_text(schema_code.SCHEMA_PATH.read_text())
    monkeypatch.setattr(schema_code, "SCHEMA_PATH", schema)
    monkeypatch.setattr(schema_code, "CACHE_DIR", tmp_path / "cache")
    first = schema_code._generate()
    assert schema_code._generate() == first  # unchanged schema: no regeneration
    schema.write_text(schema.read_text() + "\n// a comment changes the content\n")
    second = schema_code._generate()
    assert second != first and (second / schema_code.ONEFILE_NAME).is_file()
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [second.name]  # stale copy pruned


def test_missing_flatc_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(schema_code, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setenv("TARN_FLATC", "")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConversionError, match="flatc not found"):
        schema_code._generate()
