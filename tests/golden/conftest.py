"""The golden tests under a forced kernel variant (TARN_KERNELS, see
kernels/kernels.h): ctest runs them once per variant. A variant this CPU or
build lacks would silently fall back to scalar; the session ends with 77
instead, which ctest reports as skipped. So it does for the variant this CPU
picks by itself, which pytest_goldens has just tested."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

SKIP_RETURN_CODE = 77


def pytest_sessionstart(session):
    forced = os.environ.get("TARN_KERNELS")
    tarn = os.environ.get("TARN_BIN")
    goldens = os.environ.get("TARN_GOLDENS")
    if not forced or not tarn or not goldens:
        return
    model = Path(goldens) / "tokens" / "model.tarn"
    result = subprocess.run([tarn, "info", str(model)], capture_output=True, text=True)
    if f"TARN_KERNELS={forced}" in result.stderr:
        pytest.exit(f"TARN_KERNELS={forced}: {result.stderr.strip()}", returncode=SKIP_RETURN_CODE)
    if kernels_in_use(tarn, model, forced=None) == forced:
        pytest.exit(f"TARN_KERNELS={forced} is what this CPU picks unforced: pytest_goldens tests it",
                    returncode=SKIP_RETURN_CODE)


def kernels_in_use(tarn, model, forced):
    """The kernel variant `tarn info` reports, with TARN_KERNELS=forced (None:
    unset)."""
    env = {key: value for key, value in os.environ.items() if key != "TARN_KERNELS"}
    if forced is not None:
        env["TARN_KERNELS"] = forced
    result = subprocess.run([tarn, "info", str(model)], capture_output=True, text=True, env=env, check=True)
    names = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("kernels ")]
    assert len(names) == 1, f"`tarn info` names no kernel variant:\n{result.stdout}"
    return names[0]


@pytest.fixture(name="kernels_in_use")
def kernels_in_use_fixture():
    return kernels_in_use


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "any_kernels: what the test checks does not depend on the kernel variant "
        "(a file's layout, the converter's output, an error message), or other tests "
        "cover every variant's kernels on its path; the forced-variant runs leave it out")


def pytest_collection_modifyitems(config, items):
    """Under a forced variant, only the tests whose outcome depends on it."""
    if not os.environ.get("TARN_KERNELS"):
        return
    left_out = [item for item in items if "any_kernels" in item.keywords]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if "any_kernels" not in item.keywords]


@pytest.fixture(scope="session")
def converted(tmp_path_factory):
    """converted(arch, fixture_dir, *options): the `.tarn` the converter's
    command line makes from fixture_dir's model.pt and config.json, made once
    per session (each conversion starts Python and torch: seconds)."""
    root = Path(__file__).resolve().parents[2]
    made = {}

    def convert(arch: str, fixture: Path, *options: str) -> Path:
        key = (arch, fixture, options)
        if key not in made:
            model = tmp_path_factory.mktemp("converted") / "model.tarn"
            result = subprocess.run(
                [sys.executable, "-m", "converter", "convert", str(fixture / "model.pt"), str(model),
                 "--arch", arch, "--config", str(fixture / "config.json"), *options],
                capture_output=True, text=True, cwd=root)
            assert result.returncode == 0, result.stderr
            made[key] = model
        return made[key]

    return convert
