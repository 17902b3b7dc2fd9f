"""Bad input at the `tarn` command line: every case exits non-zero with one
`error:` line that names the problem, and never crashes (a crash is a
negative return code: a signal).

Run by ctest, which sets TARN_BIN (the CLI) and TARN_GOLDENS (the golden
models, for `tarn transcribe`'s speech model). Token and frame models are
the fuzzers' committed seeds. tests/speech/test_transcribe.py covers more
WAV cases (u-law, ADPCM, 22.05 kHz, header only).
"""

import os
import signal
import struct
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
TARN = os.environ.get("TARN_BIN")
SEEDS = ROOT / "tests" / "fuzz" / "seeds"
TOKENS = SEEDS / "tokens_elu_post_sinusoidal.tarn"  # vocabulary 5
FRAMES = SEEDS / "frames_projected_conv_labels.tarn"  # frames of 3

pytestmark = pytest.mark.skipif(not TARN, reason="TARN_BIN is not set: run through ctest")


def tarn(*args, stdin=None) -> subprocess.CompletedProcess:
    result = subprocess.run([TARN, *map(str, args)], capture_output=True, text=True, input=stdin, timeout=120)
    assert result.returncode >= 0, f"tarn died of signal {-result.returncode}:\n{result.stderr}"
    return result


def fails_with(result: subprocess.CompletedProcess, *fragments: str) -> None:
    assert result.returncode != 0, f"expected failure, got success:\n{result.stdout}"
    for fragment in fragments:
        assert fragment in result.stderr, f"{fragment!r} not in:\n{result.stderr}"


def npy_with_header(path: Path, header: str, data: bytes = b"") -> Path:
    """A .npy file with a hand-written header dictionary."""
    h = header.encode()
    h += b" " * ((64 - (10 + len(h) + 1) % 64) % 64) + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + data)
    return path


def run(model: Path, inputs: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    return tarn("run", model, "--input", inputs, "--output", tmp_path / "out.npy")


# --- tarn run / tarn info: models ---------------------------------------------


def test_missing_model_file(tmp_path):
    np.save(tmp_path / "in.npy", np.zeros(3, np.int32))
    fails_with(run(tmp_path / "absent.tarn", tmp_path / "in.npy", tmp_path), "cannot open", "absent.tarn")
    fails_with(tarn("info", tmp_path / "absent.tarn"), "cannot open", "absent.tarn")


@pytest.mark.parametrize("start, identifier", [
    (b"PK\x03\x04\x14\x00\x00\x00", r"\x14\x00\x00\x00"),
    (b"\x93NUMPY\x01\x00v\x00{'descr'", r"PY\x01\x00"),
])
def test_model_that_is_not_a_tarn_file(tmp_path, start, identifier):
    """The identifier's bytes are shown escaped: pasted raw, a NUL cut the
    message short and control bytes reached the terminal."""
    path = tmp_path / "model.tarn"
    path.write_bytes(start + bytes(100))
    result = tarn("info", path)
    fails_with(result, f"not a tarn model: file identifier is '{identifier}', expected 'TARN'")
    assert not any(ord(ch) < 0x20 for ch in result.stderr.rstrip("\n"))


def test_truncated_model(tmp_path):
    path = tmp_path / "model.tarn"
    path.write_bytes(TOKENS.read_bytes()[:1000])
    fails_with(tarn("info", path), "truncated or corrupt")


def test_empty_model(tmp_path):
    path = tmp_path / "model.tarn"
    path.write_bytes(b"")
    fails_with(tarn("info", path), "is empty")


def test_model_with_damaged_weights(tmp_path):
    from converter.reader import read_tarn

    data = bytearray(TOKENS.read_bytes())
    data[read_tarn(TOKENS).tensor_offsets["head.bias"] + 2] ^= 0x40
    path = tmp_path / "model.tarn"
    path.write_bytes(bytes(data))
    result = tarn("info", path)
    fails_with(result, "weights are damaged: checksum")


def test_model_from_a_future_schema(tmp_path):
    """schema_version (two ushorts) is the root table's first field: found
    through the FlatBuffers offsets (root table at bytes 0..3, its vtable at
    table - soffset, field 0's offset at vtable + 4), its major set to 7, and
    the file checksum stamped as a writer of 7.x would (else it is damage)."""
    from tests.goldens import stamped

    data = bytearray(TOKENS.read_bytes())
    (table,) = struct.unpack_from("<I", data, 0)
    (soffset,) = struct.unpack_from("<i", data, table)
    (field,) = struct.unpack_from("<H", data, table - soffset + 4)
    assert field != 0
    struct.pack_into("<H", data, table + field, 7)
    path = tmp_path / "model.tarn"
    path.write_bytes(stamped(data))
    fails_with(tarn("info", path), "schema version 7.", "upgrade tarn")
    np.save(tmp_path / "in.npy", np.array([1, 2], np.int32))
    fails_with(run(path, tmp_path / "in.npy", tmp_path), "schema version 7.", "upgrade tarn")


# --- tarn run: inputs -----------------------------------------------------------


def test_missing_input_file(tmp_path):
    fails_with(run(TOKENS, tmp_path / "absent.npy", tmp_path), "cannot open", "absent.npy")


def test_input_that_is_not_npy(tmp_path):
    path = tmp_path / "in.npy"
    path.write_text("1 2 3\n")
    fails_with(run(TOKENS, path, tmp_path), "in.npy", "not a .npy file")


def test_token_input_of_float_dtype(tmp_path):
    np.save(tmp_path / "in.npy", np.zeros(3, np.float32))
    fails_with(run(TOKENS, tmp_path / "in.npy", tmp_path), "a token model takes a [T] integer array, not a [3] float32 one")


def test_input_of_unsupported_dtype(tmp_path):
    np.save(tmp_path / "in.npy", np.zeros((3, 3), np.float64))
    fails_with(run(FRAMES, tmp_path / "in.npy", tmp_path), "dtype '<f8' is not float32, int32 or int64")


def test_big_endian_input(tmp_path):
    np.save(tmp_path / "in.npy", np.zeros((3, 3), ">f4"))
    fails_with(run(FRAMES, tmp_path / "in.npy", tmp_path), "dtype '>f4' is not float32, int32 or int64")


def test_token_input_of_wrong_rank(tmp_path):
    np.save(tmp_path / "in.npy", np.zeros((3, 1), np.int32))
    fails_with(run(TOKENS, tmp_path / "in.npy", tmp_path), "a token model takes a [T] integer array, not a [3, 1] integer one")


def test_frames_of_wrong_width(tmp_path):
    np.save(tmp_path / "in.npy", np.zeros((4, 2), np.float32))
    fails_with(run(FRAMES, tmp_path / "in.npy", tmp_path), "a frame model takes a [T, 3] float32 array, not a [4, 2] float32 one")


def test_frames_of_integer_dtype(tmp_path):
    np.save(tmp_path / "in.npy", np.zeros((4, 3), np.int32))
    fails_with(run(FRAMES, tmp_path / "in.npy", tmp_path), "a frame model takes a [T, 3] float32 array, not a [4, 3] integer one")


def test_fortran_order_input(tmp_path):
    np.save(tmp_path / "in.npy", np.asfortranarray(np.zeros((4, 3), np.float32)))
    fails_with(run(FRAMES, tmp_path / "in.npy", tmp_path), "Fortran-order arrays are not supported")


def test_truncated_input_data(tmp_path):
    np.save(tmp_path / "in.npy", np.zeros((8, 3), np.float32))
    data = (tmp_path / "in.npy").read_bytes()
    (tmp_path / "in.npy").write_bytes(data[:-5])
    fails_with(run(FRAMES, tmp_path / "in.npy", tmp_path), "data is truncated: expected 96 bytes")


def test_truncated_input_header(tmp_path):
    np.save(tmp_path / "in.npy", np.zeros(3, np.int32))
    (tmp_path / "in.npy").write_bytes((tmp_path / "in.npy").read_bytes()[:30])
    fails_with(run(TOKENS, tmp_path / "in.npy", tmp_path), "truncated header")


def test_long_header_is_scanned_not_recursed(tmp_path):
    """40,000 spaces inside the shape: the header parser used std::regex,
    which recursed once per character and overflowed the stack (SIGSEGV)."""
    path = npy_with_header(tmp_path / "in.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (" + " " * 40000
                           + "3,), }", np.array([1, 2, 3], "<i4").tobytes())
    result = run(TOKENS, path, tmp_path)
    assert result.returncode == 0, result.stderr
    assert np.load(tmp_path / "out.npy").shape[0] == 3


def test_unknown_format_version(tmp_path):
    path = tmp_path / "in.npy"
    np.save(path, np.zeros(3, np.int32))
    data = bytearray(path.read_bytes())
    data[6] = 9
    path.write_bytes(bytes(data))
    fails_with(run(TOKENS, path, tmp_path), ".npy format version 9 is not 1, 2 or 3")


def test_header_without_shape(tmp_path):
    path = npy_with_header(tmp_path / "in.npy", "{'descr': '<i4', 'fortran_order': False, }")
    fails_with(run(TOKENS, path, tmp_path), "header lacks 'shape'")


def test_shape_that_is_not_a_number(tmp_path):
    path = npy_with_header(tmp_path / "in.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': ('x',), }")
    fails_with(run(TOKENS, path, tmp_path), "in.npy", "shape", "'x'")


def test_shape_larger_than_the_file(tmp_path):
    """A header promising 10^12 values must be refused, not allocated."""
    path = npy_with_header(tmp_path / "in.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (1000000000000,), }")
    fails_with(run(TOKENS, path, tmp_path), "in.npy", "data is truncated")


def test_shape_whose_size_overflows(tmp_path):
    """(2^64 + 2) / 3 frames of 3 floats wrap to 2 floats in 64-bit
    arithmetic: stepping them as frames of 3 would read past the buffer."""
    path = npy_with_header(
        tmp_path / "in.npy",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (6148914691236517206, 3), }",
        bytes(8),
    )
    fails_with(run(FRAMES, path, tmp_path), "in.npy", "too large")


def test_token_out_of_range(tmp_path):
    np.save(tmp_path / "in.npy", np.array([1, 2, 5, 0], np.int32))
    fails_with(run(TOKENS, tmp_path / "in.npy", tmp_path), "step 2: token 5 is out of range: the vocabulary has 5 tokens")


def test_negative_token(tmp_path):
    np.save(tmp_path / "in.npy", np.array([-3], np.int64))
    fails_with(run(TOKENS, tmp_path / "in.npy", tmp_path), "step 0: token -3 is out of range")


def test_token_beyond_32_bits(tmp_path):
    """An int64 token that no int32 holds is named as it is, not wrapped."""
    np.save(tmp_path / "in.npy", np.array([1, 2**40], np.int64))
    fails_with(run(TOKENS, tmp_path / "in.npy", tmp_path), "token 1099511627776 at index 1 is out of range")


def test_token_out_of_range_in_a_prefill(tmp_path):
    np.save(tmp_path / "in.npy", np.array([1, 2, 5, 0], np.int32))
    result = tarn("run", TOKENS, "--input", tmp_path / "in.npy", "--output", tmp_path / "out.npy", "--prefill", 4)
    fails_with(result, "token 5 at index 2 is out of range: the vocabulary has 5 tokens")


def test_token_out_of_range_in_an_encode(tmp_path):
    np.save(tmp_path / "in.npy", np.array([1, 2, 5], np.int32))
    result = tarn("encode", SEEDS / "tokens_bidirectional.tarn", "--input", tmp_path / "in.npy", "--output", tmp_path / "out.npy")
    fails_with(result, "token 5 at index 2 is out of range")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_frame_in_a_prefill(tmp_path, bad):
    frames = np.zeros((4, 3), np.float32)
    frames[2, 1] = bad
    np.save(tmp_path / "in.npy", frames)
    result = tarn("run", FRAMES, "--input", tmp_path / "in.npy", "--output", tmp_path / "out.npy", "--prefill", 4)
    fails_with(result, "frame 2, value 1 is", "frames must be finite")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_frame(tmp_path, bad):
    frames = np.zeros((4, 3), np.float32)
    frames[2, 1] = bad
    np.save(tmp_path / "in.npy", frames)
    fails_with(run(FRAMES, tmp_path / "in.npy", tmp_path), "frame 2: frame value 1 is", "frames must be finite")


def test_unwritable_output(tmp_path):
    np.save(tmp_path / "in.npy", np.array([1, 2], np.int32))
    result = tarn("run", TOKENS, "--input", tmp_path / "in.npy", "--output", tmp_path / "no" / "out.npy")
    fails_with(result, "cannot write", "out.npy")


# --- tarn transcribe -------------------------------------------------------------

SPEECH = Path(os.environ["TARN_GOLDENS"]) / "speech" / "model.tarn" if "TARN_GOLDENS" in os.environ else None
needs_speech = pytest.mark.skipif(
    SPEECH is None or not SPEECH.exists(), reason="no golden speech model ($TARN_GOLDENS)"
)


def wav(path: Path, *, format_tag=1, channels=1, rate=16000, bits=16, data=b"", declared=None) -> Path:
    """A RIFF/WAVE file written field by field, so that any field can lie."""
    block = channels * bits // 8
    fmt = struct.pack("<HHIIHH", format_tag, channels, rate, rate * block, block, bits)
    if format_tag not in (1, 3):
        fmt += struct.pack("<H", 0)  # cbSize: non-PCM formats carry an extension
    declared = len(data) if declared is None else declared
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt
    body += b"data" + struct.pack("<I", declared) + data
    path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    return path


def tone(seconds=0.5, rate=16000) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * 32767 * np.sin(2 * np.pi * 440 * t)).astype("<i2").tobytes()


@needs_speech
def test_valid_wav_is_transcribed(tmp_path):
    """The control: the same writer, honest fields, is accepted."""
    result = tarn("transcribe", SPEECH, wav(tmp_path / "a.wav", data=tone()), "--quiet")
    assert result.returncode == 0, result.stderr


@needs_speech
def test_missing_audio_file(tmp_path):
    fails_with(tarn("transcribe", SPEECH, tmp_path / "absent.wav"), "absent.wav", "cannot read it as audio")


@needs_speech
def test_audio_path_that_is_a_directory(tmp_path):
    # libsndfile's own message for it was "Format not recognised".
    fails_with(tarn("transcribe", SPEECH, tmp_path), "cannot read it as audio: it is a directory")


def test_output_through_a_dangling_symlink_creates_its_target(tmp_path):
    # The output was written over the link, replacing it by a file.
    np.save(tmp_path / "in.npy", np.arange(4, dtype=np.int32))
    (tmp_path / "out").mkdir()
    link = tmp_path / "link.npy"
    link.symlink_to(Path("out") / "target.npy")
    result = tarn("run", TOKENS, "--input", tmp_path / "in.npy", "--output", link)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and (tmp_path / "out" / "target.npy").is_file()
    assert np.load(link).shape[0] == 4


def test_output_that_cannot_be_replaced_says_why(tmp_path):
    """A writable file in a directory that takes no new file: the message
    named the file as if it were missing ("No such file or directory" for
    /proc/version). Root writes any directory, but not /proc's."""
    np.save(tmp_path / "in.npy", np.arange(4, dtype=np.int32))
    if os.geteuid() == 0:
        if not os.path.exists("/proc/version"):
            pytest.skip("root, and no /proc/version: no directory that refuses root a new file")
        target = Path("/proc/version")
    else:
        locked = tmp_path / "locked"
        locked.mkdir()
        target = locked / "out.npy"
        target.write_bytes(b"")
        target.chmod(0o666)
        locked.chmod(0o555)
    try:
        result = tarn("run", TOKENS, "--input", tmp_path / "in.npy", "--output", target)
    finally:
        if target.parent.name == "locked":
            target.parent.chmod(0o755)
    fails_with(result, f"cannot write '{target}': cannot create '{target}.partial-XXXXXX' beside it")


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM, signal.SIGPIPE])
def test_a_run_ended_by_a_signal_removes_its_temporaries(tmp_path, signal_number):
    """A killed run left its PATH.partial-XXXXXX files. Here the state
    arrays' temporaries are written and the output, a FIFO written in place
    after them, blocks until a reader comes: the signal arrives then."""
    np.save(tmp_path / "in.npy", np.arange(4, dtype=np.int32))
    fifo, state = tmp_path / "out.fifo", tmp_path / "state"
    os.mkfifo(fifo)
    state.mkdir()
    run = subprocess.Popen([TARN, "run", TOKENS, "--input", tmp_path / "in.npy", "--output", fifo,
                            "--state-dir", state], stderr=subprocess.PIPE)
    try:
        for _ in range(600):  # until both temporaries are there (60 s at most)
            if len(list(state.glob("*.partial-*"))) == 2 or run.poll() is not None:
                break
            time.sleep(0.1)
        assert len(list(state.glob("*.partial-*"))) == 2, run.stderr.read() if run.poll() is not None else ""
        run.send_signal(signal_number)
        assert run.wait(timeout=60) == -signal_number
    finally:
        run.kill()
        run.wait()
    assert list(state.iterdir()) == []


def test_a_file_named_like_a_temporary_is_left_alone(tmp_path):
    """Outputs went through the fixed name PATH.partial, opened over a
    user's file of that name and then removed, by a run that succeeded and
    by one that failed after checking the output. A temporary takes a name
    no file has, and the output the mode a new file gets."""
    np.save(tmp_path / "in.npy", np.arange(4, dtype=np.int32))
    np.save(tmp_path / "bad.npy", np.array([1, 99], np.int32))
    mine = tmp_path / "out.npy.partial"
    mine.write_bytes(b"mine")
    result = tarn("run", TOKENS, "--input", tmp_path / "bad.npy", "--output", tmp_path / "out.npy")
    fails_with(result, "token 99")
    assert mine.read_bytes() == b"mine"
    result = tarn("run", TOKENS, "--input", tmp_path / "in.npy", "--output", tmp_path / "out.npy")
    assert result.returncode == 0, result.stderr
    assert mine.read_bytes() == b"mine"
    assert np.load(tmp_path / "out.npy").shape[0] == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.npy", "in.npy", "out.npy", "out.npy.partial"]
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "out.npy").stat().st_mode & 0o777 == 0o666 & ~umask


def test_output_through_a_symlink_loop_is_refused(tmp_path):
    # A loop was taken for a dangling link and one of its links replaced.
    np.save(tmp_path / "in.npy", np.arange(4, dtype=np.int32))
    for name, to in (("a", "b"), ("b", "c"), ("c", "a")):
        (tmp_path / name).symlink_to(to)
    result = tarn("run", TOKENS, "--input", tmp_path / "in.npy", "--output", tmp_path / "a")
    fails_with(result, "Too many levels of symbolic links")
    assert all((tmp_path / name).is_symlink() for name in "abc")


@needs_speech
def test_file_that_is_not_audio(tmp_path):
    path = tmp_path / "notes.wav"
    path.write_text("this is not audio\n" * 20)
    fails_with(tarn("transcribe", SPEECH, path), "notes.wav", "cannot read it as audio: not a format libsndfile reads")


@needs_speech
def test_wav_cut_inside_its_header(tmp_path):
    path = wav(tmp_path / "a.wav", data=tone())
    path.write_bytes(path.read_bytes()[:30])
    fails_with(tarn("transcribe", SPEECH, path), "a.wav", "cannot read it as audio")


@needs_speech
def test_truncated_wav(tmp_path):
    data = tone()
    path = wav(tmp_path / "a.wav", data=data[: len(data) // 2], declared=len(data))
    fails_with(
        tarn("transcribe", SPEECH, path),
        "a.wav: the file is truncated: its data chunk declares 16000 bytes of audio but only 8000 are present",
    )


@needs_speech
@pytest.mark.parametrize("rate", [8000, 44100])
def test_unsupported_sample_rate(tmp_path, rate):
    path = wav(tmp_path / "a.wav", rate=rate, data=tone(rate=rate))
    fails_with(
        tarn("transcribe", SPEECH, path),
        f"is sampled at {rate} Hz, but the model expects 16000 Hz",
        "sox",
    )


@needs_speech
def test_wav_without_channels(tmp_path):
    path = wav(tmp_path / "a.wav", channels=0, data=bytes(100))
    result = tarn("transcribe", SPEECH, path)
    assert result.returncode != 0 and "a.wav" in result.stderr, result.stderr


@needs_speech
def test_non_finite_sample_names_its_place_in_the_file(tmp_path):
    samples = np.zeros(16000, "<f4")
    samples[8000] = np.nan
    path = wav(tmp_path / "a.wav", format_tag=3, bits=32, data=samples.tobytes())
    fails_with(tarn("transcribe", SPEECH, path), "a.wav, the chunk from sample 8000 (0.500 s)", "is nan")


@needs_speech
@pytest.mark.parametrize("boost", ["nan", "inf", "1e39", "0", "-1", "x", "0x10"])
def test_hotword_boost_that_is_not_a_finite_positive_number(tmp_path, boost):
    """Refused as the option it is, not blamed on the hotword file's first
    line."""
    (tmp_path / "hot.txt").write_text("one two\n")
    result = tarn("transcribe", SPEECH, wav(tmp_path / "a.wav", data=tone()), "--hotwords", tmp_path / "hot.txt",
                  "--hotword-boost", boost)
    fails_with(result, f"--hotword-boost: '{boost}' is not a finite number above 0")
    assert "hot.txt" not in result.stderr, result.stderr


@needs_speech
def test_word_list_and_hotwords_with_a_byte_order_mark(tmp_path):
    """Editors on Windows start a UTF-8 file with a byte order mark: it is
    not part of the first word."""
    audio = wav(tmp_path / "a.wav", data=tone())
    (tmp_path / "words.txt").write_bytes(b"\xef\xbb\xbfone\ntwo\n")
    (tmp_path / "hot.txt").write_bytes(b"\xef\xbb\xbfone two :2\n")
    for option, name in (("--words", "words.txt"), ("--hotwords", "hot.txt")):
        result = tarn("transcribe", SPEECH, audio, "--quiet", option, tmp_path / name)
        assert result.returncode == 0, result.stderr


@needs_speech
def test_a_character_no_label_spells_is_shown_by_its_bytes(tmp_path):
    (tmp_path / "words.txt").write_bytes(b"one\nbad\x01word\n")
    fails_with(tarn("transcribe", SPEECH, wav(tmp_path / "a.wav", data=tone()), "--words", tmp_path / "words.txt"),
               'no label for "\x01" (bytes 01) at byte 3')


def test_transcribe_with_a_model_without_front_end(tmp_path):
    """A token model has no audio recipe: the error says so."""
    result = tarn("transcribe", TOKENS, wav(tmp_path / "a.wav", data=tone()))
    assert result.returncode != 0
    assert "error:" in result.stderr and ("audio" in result.stderr or "frames" in result.stderr), result.stderr


@needs_speech
def test_audio_recipe_with_an_unknown_window_function(tmp_path):
    """A window function newer than this runtime (a writer's enum value 7):
    `tarn info` names it rather than omitting the audio line, and transcribe
    refuses the model naming it."""
    from converter.schema_code import schema
    from tests.goldens import stamped

    data = bytearray(SPEECH.read_bytes())
    audio = schema().Model.GetRootAs(data, 0).Audio()
    field = audio._tab.Offset(22)  # window: the AudioFrontEnd's field 9 (4 + 2 * 9)
    assert field != 0, "the golden speech model stores no window function"
    data[audio._tab.Pos + field] = 7
    path = tmp_path / "model.tarn"
    path.write_bytes(stamped(data))
    info = tarn("info", path)
    assert info.returncode == 0, info.stderr
    assert "audio            cannot be used: audio front end: window function 7 is unknown" in info.stdout, info.stdout
    fails_with(tarn("transcribe", path, wav(tmp_path / "a.wav", data=tone())), "window function 7 is unknown")


# --- tarn adapt --------------------------------------------------------------------


@needs_speech
def test_adapt_names_the_bad_file_among_good_ones(tmp_path):
    """A speaker's files go through the warp estimator one by one: a bad one
    stops it, named, and nothing is printed as the warp."""
    good = wav(tmp_path / "good.wav", data=tone())
    assert tarn("adapt", SPEECH, good).returncode == 0
    data = tone()
    truncated = wav(tmp_path / "cut.wav", data=data[: len(data) // 2], declared=len(data))
    result = tarn("adapt", SPEECH, good, truncated, good)
    fails_with(result, "cut.wav: the file is truncated")
    assert result.stdout == ""
    fails_with(
        tarn("adapt", SPEECH, good, wav(tmp_path / "r8k.wav", rate=8000, data=tone(rate=8000))),
        "r8k.wav is sampled at 8000 Hz, but the model expects 16000 Hz",
    )


@needs_speech
def test_adapt_without_a_model_step_of_audio(tmp_path):
    # A step of the golden speech model stacks 9 frames of 400 samples every
    # 160: 1,680 samples. 1,679 hold 8 frames and no step.
    short = wav(tmp_path / "short.wav", data=tone()[: 2 * 1679])
    fails_with(
        tarn("adapt", SPEECH, short, short),
        "no utterance is long enough for a model step to estimate a warp from "
        "(a step needs 1680 samples of one utterance, 105 ms)",
    )
    enough = wav(tmp_path / "enough.wav", data=tone()[: 2 * 1680])
    result = tarn("adapt", SPEECH, short, enough)
    assert result.returncode == 0, result.stderr
    float(result.stdout)


def test_adapt_with_a_model_without_front_end(tmp_path):
    fails_with(tarn("adapt", TOKENS, wav(tmp_path / "a.wav", data=tone())), "no audio front end")
