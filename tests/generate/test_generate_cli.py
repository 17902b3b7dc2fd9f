"""`tarn generate` end to end with the bundled Fashion-MNIST model: the PNG it
writes is valid, has the grid's dimensions and the right images in the right
cells; a seed repeats, another seed differs; bad arguments are refused with
a message naming the problem. Run by ctest (generate_cli), which passes
`tarn`, the Fashion-MNIST test images and the golden models (of which a frame
model and a token model without an image layout are refused) in the
environment (conftest.py).
"""

import gzip
import os
import re
import struct
import subprocess
import tempfile
import zlib

import numpy as np

GAP = 2  # grey pixels between and around cells (x scale), as generate.cc draws


def read_png(path):
    """(width, height, pixels uint8 [h, w]) of an 8-bit greyscale PNG, checking
    its signature, every chunk's CRC and the IDAT stream's length."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature"
    pos, chunks = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, f"bad CRC in {kind}"
        chunks.append((kind, body))
        pos += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, colour, interlace) == (8, 0, 0), "not 8-bit greyscale, non-interlaced"
    raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    assert len(raw) == height * (1 + width), "IDAT holds the wrong number of bytes"
    return width, height, unfilter(raw, width, height)


def unfilter(raw, width, height):
    """Undoes PNG's per-row filters (1 byte per pixel)."""
    out = np.zeros((height, width), dtype=np.int64)
    for y in range(height):
        kind = raw[y * (width + 1)]
        row = np.frombuffer(raw, dtype=np.uint8, count=width, offset=y * (width + 1) + 1).astype(np.int64)
        up = out[y - 1] if y else np.zeros(width, dtype=np.int64)
        if kind == 0:
            out[y] = row
        elif kind == 2:
            out[y] = (row + up) % 256
        else:  # sub, average, paeth depend on the pixel to the left
            for x in range(width):
                left = out[y, x - 1] if x else 0
                upper_left = up[x - 1] if x else 0
                if kind == 1:
                    predictor = left
                elif kind == 3:
                    predictor = (left + up[x]) // 2
                elif kind == 4:
                    p = left + up[x] - upper_left
                    pa, pb, pc = abs(p - left), abs(p - up[x]), abs(p - upper_left)
                    predictor = left if pa <= pb and pa <= pc else up[x] if pb <= pc else upper_left
                else:
                    raise AssertionError(f"unknown PNG filter {kind}")
                out[y, x] = (row[x] + predictor) % 256
    return out.astype(np.uint8)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        _, count, rows, cols = struct.unpack(">IIII", f.read(16))
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(count, rows, cols)


def cell(pixels, row, col, scale, size=28):
    """Cell (row, col) of a grid, scaled back down to [size, size]."""
    y0 = GAP * scale + row * (size + GAP) * scale
    x0 = GAP * scale + col * (size + GAP) * scale
    return pixels[y0 : y0 + size * scale : scale, x0 : x0 + size * scale : scale]


MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "generate", "model",
                     "fashion.tarn")


def test_generate_cli(tarn, fashion_test, goldens):
    model, idx = MODEL, fashion_test
    failures = []

    def check(condition, what):
        print(("ok   " if condition else "FAIL ") + what)
        if not condition:
            failures.append(what)

    def generate(*args):
        return subprocess.run([tarn, "generate", *args, "--quiet"], capture_output=True, text=True)

    with tempfile.TemporaryDirectory() as tmp:
        def out(name):
            return os.path.join(tmp, name)

        # Unconditional: 5 images make a 3 x 2 grid (3 columns).
        r = generate(model, "--out", out("a.png"), "--count", "5", "--seed", "1", "--scale", "1")
        check(r.returncode == 0, f"unconditional run succeeds ({r.stderr.strip()})")
        width, height, a = read_png(out("a.png"))
        check((width, height) == (3 * 28 + 4 * GAP, 2 * 28 + 3 * GAP),
              f"unconditional grid is {width} x {height}, expected 92 x 62")
        check(np.all(cell(a, 1, 2, 1) == 128), "the sixth (empty) cell is grey")
        samples = [cell(a, i // 3, i % 3, 1) for i in range(5)]
        check(all(s.std() > 0 for s in samples), "every sample has more than one grey level")

        r = generate(model, "--out", out("b.png"), "--count", "5", "--seed", "1", "--scale", "1")
        check(r.returncode == 0 and open(out("a.png"), "rb").read() == open(out("b.png"), "rb").read(),
              "the same seed gives the same PNG, byte for byte")
        r = generate(model, "--out", out("c.png"), "--count", "5", "--seed", "2", "--scale", "1")
        c = read_png(out("c.png"))[2]
        check(r.returncode == 0 and all(np.any(cell(c, i // 3, i % 3, 1) != samples[i]) for i in range(5)),
              "another seed gives different images")
        # Image i depends on the seed and i only, not on how many are drawn.
        r = generate(model, "--out", out("d.png"), "--count", "2", "--seed", "1", "--scale", "1")
        d = read_png(out("d.png"))[2]
        check(np.array_equal(cell(d, 0, 1, 1), samples[1]), "image 1 is the same whether 2 or 5 are drawn")

        # Completions: rows = images, columns = the kept top, 2 completions, the original.
        originals = read_idx(idx)
        r = generate(model, "--out", out("e.png"), "--complete", idx, "--first", "3", "--count", "2",
                     "--per-image", "2", "--scale", "2", "--seed", "5", "--top-k", "20", "--temperature", "0.9")
        check(r.returncode == 0, f"completion run succeeds ({r.stderr.strip()})")
        width, height, e = read_png(out("e.png"))
        check((width, height) == (4 * 56 + 5 * 2 * GAP, 2 * 56 + 3 * 2 * GAP),
              f"completion grid is {width} x {height}, expected 244 x 124")
        for i in range(2):
            original = originals[3 + i]
            check(np.array_equal(cell(e, i, 3, 2), original), f"row {i} ends with test image {3 + i}")
            kept = cell(e, i, 0, 2)
            check(np.array_equal(kept[:14], original[:14]) and np.all(kept[14:] == 128),
                  f"row {i} starts with the top half of image {3 + i}, the rest grey")
            for j in range(2):
                completion = cell(e, i, 1 + j, 2)
                check(np.array_equal(completion[:14], original[:14]),
                      f"completion {j} of image {3 + i} keeps its top half")

        # Bad arguments: a clear message on stderr, a failing exit status (1,
        # or CLI11's own for a value it cannot parse), no PNG.
        truncated = out("truncated.idx")
        with open(truncated, "wb") as f:
            f.write(struct.pack(">IIII", 0x803, 10, 28, 28) + bytes(28 * 28))
        # A header alone that announces 4 GB: found truncated without
        # allocating them (it took 11.6 s and 4.2 GB before).
        huge = out("huge.idx")
        with open(huge, "wb") as f:
            f.write(struct.pack(">IIII", 0x803, 65535, 256, 256))
        bad = [
            ([os.path.join(tmp, "missing.tarn")], "missing.tarn"),
            ([os.path.join(goldens, "frames", "model.tarn")], "not an image model"),
            ([os.path.join(goldens, "tokens", "model.tarn")], "lacks the image layout in its metadata"),
            ([model, "--temperature", "0"], "temperature must be finite and > 0"),
            ([model, "--temperature=-1"], "temperature must be finite and > 0"),
            ([model, "--temperature", "nan"], "temperature"),
            ([model, "--top-k", "300"], "--top-k 300 is more than the 256 grey levels a pixel takes"),
            ([model, "--top-k", "-2"], "--top-k"),
            ([model, "--complete", os.path.join(tmp, "missing.idx")], "cannot open idx file"),
            ([model, "--complete", model], "is not an idx3-ubyte image file"),
            ([model, "--complete", tmp], "Is a directory"),
            ([model, "--complete", truncated], "is truncated"),
            ([model, "--complete", idx, "--first", "9999", "--count", "2"], "holds 10000 images"),
            ([model, "--complete", idx, "--known-rows", "28"], "leaves nothing to draw"),
            ([model, "--complete", huge], "holds 0 of 4294901760 pixel bytes"),
            ([model, "--seed", "18446744073709551616"], "is not an integer in [0, 2^64 - 1]"),
            ([model, "--seed=-1"], "is not an integer in [0, 2^64 - 1]"),
            ([model, "--first", "3"], "--first requires --complete"),
            ([model, "--known-rows", "5"], "--known-rows requires --complete"),
            ([model, "--complete", idx, "--count", "2100", "--per-image", "1", "--scale", "16"],
             "the grid would be 1472 x 1008032 pixels"),
        ]
        for args, expected in bad:
            target = out("bad.png")
            r = generate(*args, "--out", target)
            check(r.returncode > 0 and expected in r.stderr and not os.path.exists(target),
                  f"{' '.join(args[-2:])}: exit {r.returncode}, stderr {r.stderr.strip()!r} "
                  f"(expected {expected!r})")

        # A failure leaves the file at --out as it was, and an unwritable
        # --out is refused before anything is drawn.
        kept = out("kept.png")
        with open(kept, "w") as f:
            f.write("an earlier grid")
        r = generate(model, "--complete", idx, "--count", "2100", "--per-image", "1", "--scale", "16", "--out", kept)
        left = [name for name in os.listdir(os.path.dirname(kept)) if name.startswith("kept.png.partial")]
        check(r.returncode > 0 and open(kept).read() == "an earlier grid" and not left,
              f"a failed run left --out as it was: {r.stderr.strip()!r}")
        r = generate(model, "--count", "64", "--out", os.path.join(tmp, "no-such-dir", "g.png"))
        check(r.returncode > 0 and "cannot write" in r.stderr and "no-such-dir" in r.stderr,
              f"unwritable --out refused: {r.stderr.strip()!r}")

    assert not failures, f"{len(failures)} check(s) failed: " + "; ".join(failures)


def test_image_metadata_must_be_whole_numbers_in_range(tarn, tmp_path):
    """A layout read as far as it parses ("28px" as 28) or wrapped to 32 bits
    (2^32 + 4 as 4) drew images of a shape the model never learned."""
    from converter.config import ModelConfig
    from converter.shapes import expected_shapes
    from converter.writer import write_tarn

    config = ModelConfig(d_model=8, num_layers=1, num_heads=1, d_key=8, d_value=8, d_ff=8, vocab_size=257,
                         output_dim=256, position="sinusoidal")
    rng = np.random.default_rng(0)
    tensors = {n: (0.3 * rng.standard_normal(s)).astype(np.float32) for n, s in expected_shapes(config).items()}
    layout = {"image_height": "4", "image_width": "4", "image_start_token": "256"}
    for key, value, message in [
        ("image_height", "4294967300", "metadata image_height '4294967300' is not an integer in [1, 65536]"),
        ("image_width", "28px", "metadata image_width '28px' is not an integer in [1, 65536]"),
        ("image_width", "", "metadata image_width '' is not an integer in [1, 65536]"),
        ("image_start_token", "257", "metadata image_start_token '257' is not an integer in [256, 256] "
         "(a token outside the grey levels) nor none"),
        # A grey level as the start token: the first pixel read as black.
        ("image_start_token", "0", "metadata image_start_token '0' is not an integer in [256, 256]"),
        # shown escaped: raw, the value's newline and escape sequence reached the terminal
        ("image_width", "4\n\x1b[2J", "metadata image_width '4\\x0a\\x1b[2J' is not an integer in [1, 65536]"),
    ]:
        model, out = tmp_path / "image.tarn", tmp_path / "image.png"
        write_tarn(model, config, tensors, metadata={**layout, key: value})
        r = subprocess.run([tarn, "generate", model, "--out", out, "--count", "1", "--quiet"],
                           capture_output=True, text=True)
        assert r.returncode == 1 and message in r.stderr and not out.exists(), r.stderr
    write_tarn(model, config, tensors, metadata=layout)
    r = subprocess.run([tarn, "generate", model, "--out", out, "--count", "1", "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0 and out.exists(), r.stderr
    # A vocabulary of the grey levels alone has no token to start with.
    config.vocab_size = 256
    tensors = {n: (0.3 * rng.standard_normal(s)).astype(np.float32) for n, s in expected_shapes(config).items()}
    write_tarn(model, config, tensors, metadata={**layout, "image_start_token": "0"})
    r = subprocess.run([tarn, "generate", model, "--out", out, "--count", "1", "--quiet"], capture_output=True, text=True)
    assert r.returncode == 1 and "holds only the grey levels" in r.stderr and "image_start_token=none" in r.stderr, \
        r.stderr


def test_progress_is_redrawn_whenever_its_percentage_changes(tarn, tmp_path):
    """A batch advances 64 pixels a step; the bar compared each total with
    the total one pixel earlier, so at 128 images of 4 x 4 pixels it showed
    25, 50, 75 and 100 % only."""
    from converter.config import ModelConfig
    from converter.shapes import expected_shapes
    from converter.writer import write_tarn

    config = ModelConfig(d_model=8, num_layers=1, num_heads=1, d_key=8, d_value=8, d_ff=8, vocab_size=257,
                         output_dim=256, position="sinusoidal")
    rng = np.random.default_rng(0)
    tensors = {n: (0.3 * rng.standard_normal(s)).astype(np.float32) for n, s in expected_shapes(config).items()}
    model, out = tmp_path / "image.tarn", tmp_path / "image.png"
    write_tarn(model, config, tensors,
               metadata={"image_height": "4", "image_width": "4", "image_start_token": "256"})
    r = subprocess.run([tarn, "generate", model, "--out", out, "--count", "128"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    shown = [int(percent) for percent in re.findall(r"\] +(\d+)%", r.stderr)]
    # Two batches of 64 images, 16 steps each, 64 pixels a step.
    expected = sorted({64 * step * 100 // (128 * 16) for step in range(1, 33)})
    assert shown == expected, r.stderr
