"""examples/generate/train.py refuses, with one argparse error line and
before any training, the arguments that would train forever, divide by zero
or never step: a training time or learning rate that is not a positive
number, a batch outside [1, training images], fewer than one test image or
thread. Run by ctest (generate_train_args); trains nothing.
"""

import gzip
import importlib.util
import os
import struct

import pytest

TRAIN_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "generate", "train.py")


@pytest.fixture(scope="module")
def train():
    spec = importlib.util.spec_from_file_location("train", TRAIN_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def refusal(train, capsys, argv):
    with pytest.raises(SystemExit) as exit:
        train.main(argv)
    assert exit.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    return line.split(": error: ", 1)[-1]  # after the program's name


@pytest.mark.parametrize("argv, message", [
    (["--minutes", "-1"], "argument --minutes: -1 is not a positive number"),
    (["--minutes", "0"], "argument --minutes: 0 is not a positive number"),
    (["--minutes", "nan"], "argument --minutes: nan is not a positive number"),
    (["--minutes", "inf"], "argument --minutes: inf is not a positive number"),
    (["--lr", "-0.003"], "argument --lr: -0.003 is not a positive number"),
    (["--batch", "0"], "argument --batch: 0 is not a positive integer"),
    (["--test-images", "0"], "argument --test-images: 0 is not a positive integer"),
    (["--threads", "0"], "argument --threads: 0 is not a positive integer"),
])
def test_arguments_that_cannot_train_are_refused(train, capsys, argv, message):
    assert refusal(train, capsys, argv) == message


def test_a_batch_larger_than_the_training_set_is_refused(train, capsys, tmp_path):
    with gzip.open(tmp_path / "train-images-idx3-ubyte.gz", "wb") as f:
        f.write(struct.pack(">IIII", 0x00000803, 3, 28, 28) + bytes(3 * 28 * 28))
    line = refusal(train, capsys, ["--data", str(tmp_path), "--batch", "4"])
    assert line == "argument --batch: 4 is more than the 3 training images"
