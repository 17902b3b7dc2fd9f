"""The ASR recipe's machinery (examples/asr).

train.py resumes: a run interrupted mid-epoch and rerun with
the same arguments ends with the same weights, bit for bit, as one that was
never interrupted (a fixed number of steps, one thread, batches made in
this process); other settings, threads or training transcripts refuse the
checkpoint. Also: the training-only vocal-tract length warp leaves the
front end's filterbank as it is at factor 1. On a tiny corpus of tones and
noise made here (the model learns nothing from it in 7 steps; only
the equality is checked).

make_corpus.py's plan: sets added later (extra flite, Festival, MBROLA)
change none of the utterances planned before them, and no word sequence of
an evaluation set (Festival's, MBROLA's held-out voices') is one of
training's. A corpus folder keeps its plan's settings (plan.json):
--keep-existing and --only refuse, naming them, settings that would keep
its files under other utterances, and --only keeps the rest of its
manifest (a corpus of empty files, the synthesisers stubbed out); a run
that remakes the corpus first removes another plan's files. The manifest
reader skips blank lines and refuses a short one; a failed synthesis
leaves no file behind.

train.py and run_recipe.sh refuse budgets that cannot train, before any
work; the recipe keeps the last results when its evaluation fails (a
stand-in for python); a bare export.py writes the bundled model's tensors.
Run by ctest (speech_recipe).
"""

import csv
import json
import os
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

ASR = Path(__file__).resolve().parents[2] / "examples" / "asr"
sys.path.insert(0, str(ASR))

import features  # noqa: E402
import make_corpus  # noqa: E402
import train  # noqa: E402


def write_corpus(root: Path):
    rng = np.random.default_rng(0)
    words = "zero one two three go stop".split()
    rows = []
    for split, count in (("train", 12), ("dev", 3)):
        (root / split).mkdir(parents=True)
        for i in range(count):
            n = int(rng.integers(4000, 9000))
            t = np.arange(n) / 16000
            x = 0.3 * np.sin(2 * np.pi * rng.uniform(100, 900) * t) + 0.05 * rng.standard_normal(n)
            path = root / split / f"{i}.wav"
            with wave.open(str(path), "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(16000)
                w.writeframes((np.clip(x, -1, 1) * 32767).astype("<i2").tobytes())
            text = " ".join(rng.choice(words, size=int(rng.integers(1, 3))))
            rows.append((f"{split}/{i}.wav", text, "tone", split, ""))
    with open(root / "manifest.tsv", "w", newline="") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(("path", "transcript", "voice", "split", "settings"))
        writer.writerows(rows)


def arguments(data: Path, out: Path):
    return ["--data", str(data), "--out", str(out), "--steps", "7", "--lr", "1e-3", "--threads", "1",
            "--workers", "0", "--device", "cpu", "--frames-per-batch", "400", "--checkpoint-minutes", "0",
            "--final-splits", "dev", "--augment", "robust"]


def test_interrupted_run_resumes_to_the_same_weights(tmp_path):
    data = tmp_path / "data"
    write_corpus(data)
    straight, resumed = tmp_path / "straight" / "asr.pt", tmp_path / "resumed" / "asr.pt"
    # Another run's log where this one writes (as the bundled model's is in a
    # fresh clone): a run from scratch starts its own.
    straight.parent.mkdir()
    (straight.parent / "asr.train.log").write_text("12:00:00 a line of another run\n")
    assert train.main(arguments(data, straight)) == 0
    straight_log = (straight.parent / "asr.train.log").read_text()
    assert "another run" not in straight_log and straight_log.count(" loaded ") == 1, straight_log
    # Step 5 falls in the second epoch, mid-way: the epoch's batch order and
    # the position in it must both be restored.
    assert train.main(arguments(data, resumed) + ["--stop-after", "5"]) == 3
    assert not resumed.exists()
    assert (resumed.parent / "asr.ckpt").exists()
    assert train.main(arguments(data, resumed)) == 0

    log = (resumed.parent / "asr.train.log").read_text()
    resume = [line for line in log.splitlines() if "resumed from" in line]
    assert len(resume) == 1 and "epoch 2, batch " in resume[0] and "epoch 2, batch 0," not in resume[0], resume
    assert resume[0].endswith("step 5")
    assert log.count(" loaded ") == 2, log  # the resumed run appended to the interrupted one's log
    a = torch.load(straight, weights_only=False)
    b = torch.load(resumed, weights_only=False)
    assert a["training"]["steps"] == b["training"]["steps"] == 7
    assert a["training"]["epochs"] >= 2  # the run crossed an epoch boundary
    assert a["state_dict"].keys() == b["state_dict"].keys()
    for key in a["state_dict"]:
        assert torch.equal(a["state_dict"][key], b["state_dict"][key]), key
    assert a["recipe"] == b["recipe"]

    # A finished run rerun does no more steps.
    assert train.main(arguments(data, resumed)) == 0
    c = torch.load(resumed, weights_only=False)
    for key in a["state_dict"]:
        assert torch.equal(a["state_dict"][key], c["state_dict"][key]), key

    # Other settings refuse the checkpoint instead of mixing two runs.
    with pytest.raises(SystemExit, match="other settings"):
        train.main(arguments(data, resumed)[:-1] + ["basic"])
    # So do another thread count (sums may add in another order) and a
    # corpus of the same size with other training transcripts.
    two_threads = arguments(data, resumed)
    two_threads[two_threads.index("--threads") + 1] = "2"
    with pytest.raises(SystemExit, match="'threads': \\(1, 2\\)"):
        train.main(two_threads)
    manifest = (data / "manifest.tsv").read_text().splitlines()
    path, _, rest = manifest[1].split("\t", 2)
    (data / "manifest.tsv").write_text("\n".join([manifest[0], f"{path}\tstop go stop\t{rest}", *manifest[2:]]) + "\n")
    with pytest.raises(SystemExit, match="'train_transcripts'"):
        train.main(arguments(data, resumed))


def test_vocal_tract_warp_is_the_front_end_at_factor_one():
    recipe = dict(features.RECIPE, feature_mean=[0.0] * 40, feature_std=[1.0] * 40)
    np.testing.assert_allclose(features.warped_filterbank(recipe, 1.0), features.mel_filterbank(recipe), atol=1e-12)
    x = np.random.default_rng(1).standard_normal(4000) * 0.1
    np.testing.assert_allclose(features.features(x, recipe, warp=1.0 + 1e-12), features.features(x, recipe),
                               rtol=1e-5, atol=1e-5)
    # A factor above 1 moves energy to higher mel bins (a shorter vocal tract).
    tone = np.sin(2 * np.pi * 1000 * np.arange(4000) / 16000)
    peak = features.features(tone, recipe, warp=1.0 + 1e-12).mean(0).argmax()
    assert features.features(tone, recipe, warp=1.15).mean(0).argmax() > peak


def test_corpus_plan_keeps_earlier_utterances_when_sets_are_added():
    variants = ["m1", "m2", "f1"]
    before = make_corpus.plan(300, 20, 16, 10, 1, variants, n_wide_flite=40)
    after = make_corpus.plan(300, 20, 16, 10, 1, variants, n_wide_flite=40, n_extra_flite=30, n_festival=25,
                             n_mbrola=20, n_eval_mbrola=12)
    assert after[: len(before)] == before
    added = after[len(before):]
    assert [split for split, _, _ in added] == (["train"] * 30 + ["eval_festival"] * 25 + ["eval_mbrola"] * 12
                                                + ["train"] * 20)
    extra, festival, eval_mbrola, mbrola = added[:30], added[30:55], added[55:67], added[67:]
    assert {spec["voice"] for _, _, spec in extra} <= set(make_corpus.FLITE_EXTRA)
    assert {spec["engine"] for _, _, spec in festival} == {"festival"}
    assert {spec["voice"] for _, _, spec in eval_mbrola} == set(make_corpus.MBROLA_HELD_OUT)
    assert {spec["voice"] for _, _, spec in mbrola} <= set(make_corpus.MBROLA_TRAIN)
    assert not set(make_corpus.MBROLA_TRAIN) & set(make_corpus.MBROLA_HELD_OUT)
    trained = {words for split, words, _ in after if split == "train"}
    assert not trained & {words for _, words, _ in festival + eval_mbrola}
    held_out = {words for split, words, _ in before if split != "train"}
    assert not held_out & {words for _, words, _ in extra}
    evaluated = {words for split, words, _ in after if split != "train"}
    assert not evaluated & {words for _, words, _ in mbrola}
    assert make_corpus.plan(300, 20, 16, 10, 1, variants, 40, 30, 25, 20, 12) == after  # deterministic


# -- make_corpus.py: the plan a corpus folder holds, and its manifest --------------

VARIANTS = ["m1", "m2", "f1"]
# A small corpus with every set, in the recipe's shape (run_recipe.sh's
# make_corpus.py arguments, scaled down).
SIZES = {"--train": 20, "--dev": 3, "--eval-espeak": 3, "--eval-slt": 2, "--wide-flite": 4, "--extra-flite": 3,
         "--festival": 2, "--eval-mbrola": 2, "--mbrola": 5}


def corpus_arguments(out, sizes):
    return ["--out", str(out), *[str(v) for option, value in sizes.items() for v in (option, value)]]


def planned(sizes):
    s = {option[2:].replace("-", "_"): value for option, value in sizes.items()}
    return make_corpus.manifest_rows(make_corpus.plan(
        s["train"], s["dev"], s["eval_espeak"], s["eval_slt"], 1, VARIANTS, s["wide_flite"], s["extra_flite"],
        s["festival"], s["mbrola"], s["eval_mbrola"]))


def manifest_of(out):
    return [tuple(row[c] for c in make_corpus.MANIFEST_COLUMNS)
            for row in make_corpus.read_manifest_rows(out / "manifest.tsv")]


@pytest.fixture
def no_voices(monkeypatch):
    """make_corpus.main without the synthesisers: the recipe's training
    variants as VARIANTS, and no synthesis (every file must be there)."""
    for check in ("check_synthesisers", "check_espeak_languages", "check_flite_voices", "check_festival_voices",
                  "check_mbrola_voices"):
        monkeypatch.setattr(make_corpus, check, lambda: None)
    monkeypatch.setattr(make_corpus, "espeak_variants", lambda: list(VARIANTS))

    def no_synthesis(job):
        raise AssertionError(f"synthesised {job[0]}")
    monkeypatch.setattr(make_corpus, "synthesise", no_synthesis)


def test_corpus_keeps_its_plan_and_refuses_settings_that_renumber_it(tmp_path, no_voices, capsys):
    out = tmp_path / "corpus"
    rows = planned(SIZES)
    for path, *_ in rows:  # a corpus made with SIZES (empty files: only their names matter)
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes(b"")
    # ... before make_corpus.py kept plan.json: its manifest is checked instead.
    (out / "manifest.tsv").write_text("".join("\t".join(row) + "\n" for row in [make_corpus.MANIFEST_COLUMNS, *rows]))
    make_corpus.main(corpus_arguments(out, SIZES) + ["--keep-existing"])
    assert manifest_of(out) == rows
    record = (out / "plan.json").read_text()

    # README's example (the Festival set alone, without the MBROLA options):
    # its plan is the start of the corpus's, and the manifest keeps the rest.
    readme = {k: v for k, v in SIZES.items() if "mbrola" not in k}
    make_corpus.main(corpus_arguments(out, readme) + ["--keep-existing", "--only", "eval_festival"])
    assert manifest_of(out) == rows
    assert (out / "plan.json").read_text() == record

    # An earlier step left out renumbers the later sets: refused, naming the
    # settings, and nothing is rewritten.
    renumbered = {k: v for k, v in SIZES.items() if k not in ("--extra-flite", "--festival")}
    for extra in (["--keep-existing"], ["--only", "train"]):
        with pytest.raises(SystemExit) as refusal:
            make_corpus.main(corpus_arguments(out, renumbered) + extra)
        assert "--extra-flite 3 (now 0), --festival 2 (now 0)" in str(refusal.value.code)
    assert manifest_of(out) == rows and (out / "plan.json").read_text() == record

    # A corpus made before plan.json is checked against its manifest.
    (out / "plan.json").unlink()
    with pytest.raises(SystemExit, match="lists as utterance"):
        make_corpus.main(corpus_arguments(out, renumbered) + ["--keep-existing"])
    make_corpus.main(corpus_arguments(out, SIZES) + ["--keep-existing"])
    assert (out / "plan.json").read_text() == record

    # A split that this plan does not have, and no synthesis processes: refused
    # before the voices are checked.
    capsys.readouterr()
    for argv, message in ((["--only", "eval_festval"], "--only eval_festval: not a split of this plan"),
                          (["--jobs", "0"], "argument --jobs: 0 is not a positive integer")):
        with pytest.raises(SystemExit) as refusal:
            make_corpus.main(corpus_arguments(out, SIZES) + argv)
        assert refusal.value.code == 2
        assert message in capsys.readouterr().err


def test_only_after_an_interrupted_run_warns_of_the_files_never_made(tmp_path, no_voices, capsys):
    """The manifest lists only the files made: a split an interrupted run cut
    short is said to be partial, by split."""
    out = tmp_path / "corpus"
    rows = planned(SIZES)
    for path, *_ in rows:
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes(b"")
    (out / "manifest.tsv").write_text("".join("\t".join(row) + "\n" for row in [make_corpus.MANIFEST_COLUMNS, *rows]))
    make_corpus.main(corpus_arguments(out, SIZES) + ["--keep-existing"])
    assert "warning" not in capsys.readouterr().err
    cut = [row for row in rows if row[3] == "train"][-2:]  # the run was cut in its train split
    for path, *_ in cut:
        (out / path).unlink()
    make_corpus.main(corpus_arguments(out, SIZES) + ["--keep-existing", "--only", "dev"])
    err = capsys.readouterr().err
    assert "lacks utterances this plan has, whose files were never made: train 2; make them with --keep-existing" in err
    assert manifest_of(out) == [row for row in rows if row not in cut]


def test_a_run_that_remakes_the_corpus_first_removes_another_plans_files(tmp_path):
    out = tmp_path / "corpus"
    settings = {"seed": 1, **{s: 0 for s in make_corpus.PLAN_SIZES}, "espeak_train_variants": VARIANTS}
    old = dict(settings, train=6, dev=2, festival=2)
    new = dict(settings, train=6, dev=2, extra_flite=1, festival=2)  # Festival's set renumbered
    old_rows, new_rows = (make_corpus.manifest_rows(make_corpus.plan_of(s)) for s in (old, new))
    for path, *_ in old_rows:
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes(b"")
    (out / "plan.json").write_text(json.dumps({"settings": old, "sha256": make_corpus.rows_digest(old_rows)}))
    with pytest.raises(make_corpus.PlanError, match="--extra-flite 0 \\(now 1\\)"):
        make_corpus.reconcile(str(out), new, new_rows, resume=True, only=False)
    recorded, beyond, stale = make_corpus.reconcile(str(out), new, new_rows, resume=False, only=False)
    assert recorded == new and beyond == {}
    assert stale == [row[0] for row in old_rows[8:]]  # Festival's, now at other numbers
    # A shorter plan that is the start of the corpus's keeps the longer one recorded.
    shorter = dict(old, festival=0)
    recorded, beyond, stale = make_corpus.reconcile(
        str(out), shorter, make_corpus.manifest_rows(make_corpus.plan_of(shorter)), resume=True, only=True)
    assert recorded == old and sorted(beyond) == [8, 9] and stale == []


def test_a_run_never_removes_files_no_record_lists(tmp_path):
    """A plain run removed every wav/<folder>/<digits>.wav of an OUT without
    plan.json and manifest.tsv (a user's recordings), and the whole corpus
    when plan.json could not be read."""
    out = tmp_path / "corpus"
    settings = {"seed": 1, **{s: 0 for s in make_corpus.PLAN_SIZES}, "espeak_train_variants": VARIANTS}
    settings = dict(settings, train=2, dev=1)
    rows = make_corpus.manifest_rows(make_corpus.plan_of(settings))
    own = out / "wav" / "speaker1" / "001.wav"
    own.parent.mkdir(parents=True)
    own.write_bytes(b"mine")
    assert make_corpus.reconcile(str(out), settings, rows, resume=False, only=False)[2] == []
    unlisted = out / "wav" / "train" / "000000.wav"
    unlisted.parent.mkdir(parents=True)
    unlisted.write_bytes(b"")
    with pytest.raises(make_corpus.PlanError, match="no plan.json or manifest.tsv of make_corpus.py lists"):
        make_corpus.reconcile(str(out), settings, rows, resume=False, only=False)
    (out / "plan.json").write_text("{not json")
    with pytest.raises(make_corpus.PlanError, match="plan.json: cannot read it"):
        make_corpus.reconcile(str(out), settings, rows, resume=False, only=False)
    assert own.read_bytes() == b"mine" and unlisted.exists()


def test_a_failed_synthesis_leaves_no_file_behind(tmp_path, monkeypatch):
    # flite writes its raw file, then sox fails: neither it nor the partial output stays.
    def run(command, **_):
        if command[0] == "flite":
            Path(command[command.index("-o") + 1]).write_bytes(b"raw")
            return subprocess.CompletedProcess(command, 0)
        Path(command[command.index("-c") + 4]).write_bytes(b"half")  # sox's output, begun
        raise subprocess.CalledProcessError(2, command)
    monkeypatch.setattr(make_corpus.subprocess, "run", run)
    target = tmp_path / "train" / "0.wav"
    target.parent.mkdir()
    spec = {"engine": "flite", "voice": "kal", "stretch": 1.0, "f0": 0, "cents": 0}
    with pytest.raises(make_corpus.SynthesisError):
        make_corpus.synthesise((str(target), "one two", spec))
    assert sorted(p.name for p in target.parent.iterdir()) == []


def test_manifest_reader_skips_blank_lines_and_refuses_short_ones(tmp_path):
    manifest = tmp_path / "manifest.tsv"
    header = "\t".join(make_corpus.MANIFEST_COLUMNS)
    row = "wav/train/000000.wav\tgo\tflite/awb\ttrain\tstretch=1"
    manifest.write_text(f"{header}\n{row}\n\n{row}\n\n")
    assert [r["transcript"] for r in make_corpus.read_manifest(manifest)["train"]] == ["go", "go"]
    manifest.write_text(f"{header}\n{row}\nwav/train/000001.wav\tone two\n")
    with pytest.raises(make_corpus.ManifestError, match="manifest.tsv, line 3: 2 columns, not the header's 5"):
        make_corpus.read_manifest(manifest)
    with pytest.raises(make_corpus.ManifestError, match="No such file or directory"):
        make_corpus.read_manifest(tmp_path / "none.tsv")


# -- train.py's arguments, export.py's default and the recipe script ---------------

@pytest.mark.parametrize("argv, message", [
    (["--steps", "-5"], "argument --steps: -5 is not a positive integer"),
    (["--steps", "0"], "argument --steps: 0 is not a positive integer"),
    (["--minutes", "0"], "argument --minutes: 0 is not a positive number"),
    (["--minutes", "-1"], "argument --minutes: -1 is not a positive number"),
    (["--minutes", "inf"], "argument --minutes: inf is not a positive number"),
    (["--lr", "-0.001"], "argument --lr: -0.001 is not a positive number"),
    (["--lr", "nan"], "argument --lr: nan is not a positive number"),
    (["--threads", "0"], "argument --threads: 0 is not a positive integer"),
])
def test_training_arguments_that_cannot_train_are_refused(tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as refusal:
        train.main(["--data", str(tmp_path / "nothing"), "--out", str(tmp_path / "m" / "asr.pt"), *argv])
    assert refusal.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(message)
    assert not (tmp_path / "m").exists()  # refused before anything was done


def test_training_refuses_a_missing_manifest_and_says_how_to_discard_a_checkpoint(tmp_path):
    with pytest.raises(SystemExit, match="manifest.tsv: No such file or directory"):
        train.main(["--data", str(tmp_path / "nothing"), "--out", str(tmp_path / "m" / "asr.pt")])
    data, out = tmp_path / "data", tmp_path / "model" / "asr.pt"
    write_corpus(data)
    out.parent.mkdir()
    torch.save({"plan": {"steps": 6}}, out.parent / "asr.ckpt")
    with pytest.raises(SystemExit, match="or delete it \\(train.py --restart replaces it\\) to train from scratch"):
        train.main(arguments(data, out))


def test_a_bare_export_writes_the_bundled_model(tmp_path):
    """No --dtype: the bundled model's (i8), not f32 (four times the bytes)."""
    sys.path.insert(0, str(ASR.parents[1]))
    from converter import read_tarn

    subprocess.run([sys.executable, ASR / "export.py", ASR / "model" / "asr.pt", tmp_path / "asr.tarn"], check=True)
    bundled, written = read_tarn(ASR / "model" / "asr.tarn"), read_tarn(tmp_path / "asr.tarn")
    assert written.tensors.keys() == bundled.tensors.keys()
    for name, tensor in bundled.tensors.items():
        assert written.tensors[name].dtype == tensor.dtype and np.array_equal(written.tensors[name], tensor), name


def run_recipe(tmp_path, evaluation_status, steps="3", tarn="/bin/true", out=None, converter_check="exit 0"):
    """run_recipe.sh with a stand-in for python that records its commands,
    whose check of the converter (python -c) runs the shell command
    converter_check and whose eval.py prints a table and exits with
    evaluation_status."""
    python = tmp_path / "python"
    python.write_text('#!/bin/sh\necho "$@" >> "$LOG"\ncase "$1" in -c) eval "$CONVERTER_CHECK";;\n*/eval.py)\n'
                      '  while [ $# -gt 0 ]; do if [ "$1" = --json ]; then echo {} > "$2"; fi; shift; done\n'
                      '  echo "a table"; exit $EVAL_STATUS;;\nesac\n')
    python.chmod(0o755)
    env = dict(os.environ, PYTHON=str(python), OUT=out or str(tmp_path / "model" / "asr.pt"), TARN=tarn,
               STEPS=steps, LOG=str(tmp_path / "log"), EVAL_STATUS=str(evaluation_status),
               CONVERTER_CHECK=converter_check)
    return subprocess.run(["sh", str(ASR / "run_recipe.sh"), str(tmp_path / "data")], env=env,
                          capture_output=True, text=True)


def test_recipe_keeps_the_last_results_when_evaluation_fails(tmp_path):
    (tmp_path / "model").mkdir()
    results = tmp_path / "model" / "asr.eval.txt"
    results.write_text("the last results\n")
    failed = run_recipe(tmp_path, 1)
    assert failed.returncode != 0 and "eval.py failed" in failed.stderr
    assert results.read_text() == "the last results\n"
    assert sorted(p.name for p in results.parent.iterdir()) == ["asr.eval.txt"]
    done = run_recipe(tmp_path, 0)
    assert done.returncode == 0 and done.stdout == "a table\n" and results.read_text() == "a table\n"
    assert sorted(p.name for p in results.parent.iterdir()) == ["asr.eval.json", "asr.eval.txt"]
    assert "--steps 3 " in (tmp_path / "log").read_text()


@pytest.mark.parametrize("steps", ["0", "-5", "12k"])
def test_recipe_refuses_steps_that_are_not_a_count_before_it_starts(tmp_path, steps):
    refused = run_recipe(tmp_path, 0, steps)
    assert refused.returncode == 2 and f"STEPS={steps}: " in refused.stderr
    assert not (tmp_path / "log").exists()
