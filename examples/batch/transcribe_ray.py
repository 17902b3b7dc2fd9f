"""Transcribes a corpus of audio files on a Ray cluster, one row per file.

    python examples/batch/transcribe_ray.py examples/asr/model/asr.tarn \
        examples/asr/samples --out transcripts.jsonl --workers 2

AUDIO is a directory (searched recursively for --ext files, directory links
followed; every entry with the extension that is not a directory is listed,
a dangling link too, so that it becomes an error row), a manifest (a
.txt/.tsv file whose first column is a path, a header `path` allowed, or a
.jsonl file of {"path": ...} objects; relative paths are taken from the
manifest's folder; a line that starts with # is a comment), or a single
file. Paths may be local or any URI pyarrow reads (s3://, gs://, hdfs://,
...), as Ray Data's own readers do.

The pipeline is Ray Data's: the list of files -> map_batches with a callable
class, Transcriber, of which each of --workers actors holds one tarn.Model and
one tarn.Recognizer, reset between files -> rows streamed back to the driver,
written to --out (.jsonl or .parquet). Each actor reads its files itself, so
a file that cannot be read (missing, unreadable, not a regular file) or
decoded (damaged, another sample rate) becomes a row with `error` set and the
run goes on; Ray's read_binary_files would abort the whole run on the first
unreadable path. A file that kills its worker (out of memory, a native crash)
is tried again on a restarted worker twice at most; then the run stops.

Rows: path, text, words (word, start, end: seconds, rounded to the
millisecond as `tarn transcribe --json` prints them), duration (seconds of
audio), rtf (seconds this worker spent on the file / duration), error (null
or the message). Transcripts use `tarn transcribe`'s defaults (chunks of 100
ms, greedy decoding or beam 8 with --words, endpoints after 500 ms), and
equal its output file for file.

Exit status: 0 when every file listed has its row and none is an error row;
2 when every file has its row and some are error rows; 1 when the run could
not start (a bad option, no files, a word list the model refuses) or stopped
(a worker that died a third time, on any files: each worker is restarted at
most twice in a run), or when the rows written
are not exactly the files listed, in their order (the message says how many
files have no row).
"""

import argparse
import collections
import json
import math
import os
import stat
import sys
import tempfile
import time
import warnings
from typing import Dict, List, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

# The largest file a worker reads: it holds the file's bytes about four
# times over while decoding (the bytes, a copy, the float samples), and a
# larger one would take its node's memory, or all of a worker's, and stop
# the run. 1 GiB is 9.3 h of 16 kHz 16-bit mono audio.
MAX_FILE_BYTES = 1 << 30

ROW_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("text", pa.string()),
        (
            "words",
            pa.list_(pa.struct([("word", pa.string()), ("start", pa.float64()), ("end", pa.float64())])),
        ),
        ("duration", pa.float64()),
        ("rtf", pa.float64()),
        ("error", pa.string()),
    ]
)


def round3(seconds: float) -> float:
    """Seconds rounded to milliseconds, half away from zero, as the CLI's JSON."""
    return math.copysign(math.floor(abs(seconds) * 1000.0 + 0.5), seconds) / 1000.0


def _is_uri(path: str) -> bool:
    return "://" in path


def _filesystem(path: str):
    """(filesystem, path inside it) for a local path or a URI."""
    if _is_uri(path):
        return pafs.FileSystem.from_uri(path)
    return pafs.LocalFileSystem(), os.path.abspath(path)


def _join(base: str, relative: str) -> str:
    if _is_uri(relative) or os.path.isabs(relative):
        return relative
    return base.rstrip("/") + "/" + relative if _is_uri(base) else os.path.join(base, relative)


def _list_local(root: str, ext: str) -> List[str]:
    """A local directory's entries named *ext that are not directories,
    sorted, searched recursively through directory links as pyarrow's
    listing is: a dangling link or an entry that cannot be read is listed
    (pyarrow's listing leaves it out), to become its error row. A link
    back to a directory being searched is not searched again."""
    paths = []
    stack = [(root, frozenset([_identity(root)]))]
    while stack:
        directory, ancestors = stack.pop()
        try:
            with os.scandir(directory) as entries:
                entries = list(entries)
        except OSError as e:
            raise SystemExit(f"{directory}: cannot list it: {e.strerror or e}") from None
        for entry in entries:
            try:
                is_directory = entry.is_dir()  # follows a link
            except OSError:
                is_directory = False
            if is_directory:
                identity = _identity(entry.path)
                if identity is not None and identity not in ancestors:
                    stack.append((entry.path, ancestors | {identity}))
            elif entry.name.lower().endswith(ext):
                paths.append(entry.path)
    # The rows' paths are UTF-8 text: a name that is not would stop the run
    # on its worker, after hours of work, with every row lost.
    unnamed = [p for p in paths if not _utf8(p)]
    if unnamed:
        shown = ", ".join(os.fsencode(p).decode("utf-8", "backslashreplace") for p in unnamed[:5])
        raise SystemExit(f"{len(unnamed)} file name(s) under {root} are not UTF-8 ({shown}): rename them, or list "
                         "the others in a manifest")
    return sorted(paths)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _identity(directory: str):
    try:
        st = os.stat(directory)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def list_audio(source: str, ext: str) -> List[str]:
    """The files to transcribe: a directory's --ext files (sorted), a
    manifest's paths (in order), or the one file."""
    fs, inner = _filesystem(source)
    info = fs.get_file_info(inner)
    if info.type == pafs.FileType.NotFound:
        raise SystemExit(f"{source}: no such file or directory")
    if info.type == pafs.FileType.Directory:
        if not _is_uri(source):
            return _list_local(inner, ext)
        found = fs.get_file_info(pafs.FileSelector(inner, recursive=True))
        scheme = source.split("://", 1)[0]
        return sorted(f"{scheme}://{f.path}" for f in found
                      if f.type == pafs.FileType.File and f.path.lower().endswith(ext))
    if not source.lower().endswith((".txt", ".tsv", ".jsonl", ".json")):
        return [source]
    base = source.rsplit("/", 1)[0] if _is_uri(source) else os.path.dirname(os.path.abspath(source))
    with fs.open_input_stream(inner) as f:
        data = f.read()
    try:
        lines = data.decode("utf-8-sig").splitlines()  # a byte order mark is not text
    except UnicodeDecodeError as e:
        raise SystemExit(f"{source}: not UTF-8 text (byte {e.start}); save the manifest as UTF-8") from None
    if source.lower().endswith(".json") and "\n".join(lines).lstrip().startswith("["):
        # A JSON array of {"path": ...}: one entry per line below.
        try:
            entries = json.loads("\n".join(lines))
        except json.JSONDecodeError as e:
            raise SystemExit(f"{source}: not a JSON array of objects: {e}") from None
        lines = [json.dumps(entry) for entry in entries]
    paths = []
    first = True  # the first line that is not blank or a comment may be a header
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        if source.lower().endswith((".jsonl", ".json")):
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"{source}:{n}: not a JSON object per line ({e.msg}); a .json(l) manifest holds one "
                                 '{"path": ...} per line') from None
            path = entry.get("path") if isinstance(entry, dict) else None
            if not isinstance(path, str) or not path:
                raise SystemExit(f'{source}:{n}: a line without a "path" string: {line.strip()[:80]}')
        else:
            path = line.split("\t")[0].strip()
            if first and path == "path":
                first = False
                continue  # a header
        first = False
        if not _utf8(path):
            raise SystemExit(f"{source}:{n}: the path {path!r} cannot be a file name")
        paths.append(_join(base, path))
    return paths


def read_words(path: str) -> List[str]:
    """A word list, one word per line, as `tarn transcribe --words` reads
    it: a byte order mark is not text, blank lines are skipped, and a list
    without a word is refused (ValueError), not taken as no constraint."""
    with open(path, encoding="utf-8-sig") as f:
        words = [w.strip(" \t\r\n") for w in f if w.strip(" \t\r\n")]
    if not words:
        raise ValueError(f"the word list {path} holds no words")
    return words


def _local_model(path: str) -> str:
    """A local path to the model: a URI is copied to a temporary file once
    per worker (deleted once loaded)."""
    if not _is_uri(path):
        return path
    fs, inner = _filesystem(path)
    out = tempfile.NamedTemporaryFile(suffix=".tarn", delete=False)
    with fs.open_input_stream(inner) as f, out:
        out.write(f.read())
    return out.name


class Transcriber:
    """The callable class of map_batches: built once per Ray worker (actor),
    it holds the worker's model and recognizer for every batch it is given."""

    def __init__(self, model_path: str, words: Optional[Sequence[str]], beam: Optional[int], chunk_ms: int):
        import tarn  # on the worker

        self._tarn = tarn
        local = _local_model(model_path)
        self._model = tarn.Model(local)
        if local != model_path:
            os.unlink(local)  # the model keeps its mapping of the copy
        self._recognizer = tarn.Recognizer(self._model, words=words, beam=beam)
        self._rate = self._recognizer.sample_rate
        self._chunk_ms = chunk_ms

    def _transcribe(self, samples: np.ndarray, name: str) -> Dict[str, object]:
        # tarn.transcribe's loop on this worker's recognizer; a chunk it
        # refuses raises "NAME, the chunk from sample N (S s): ...", as the
        # CLI says it.
        result = self._recognizer.transcribe(samples, chunk_ms=self._chunk_ms, name=name)
        words = [{"word": w.word, "start": round3(w.start), "end": round3(w.end)} for w in result.words]
        return {"text": result.text, "words": words, "duration": result.duration}

    def _row(self, path: str) -> Dict[str, object]:
        row = {"path": path, "text": None, "words": [], "duration": None, "rtf": None, "error": None}
        start = time.perf_counter()
        try:
            fs, inner = _filesystem(path)
            # A fifo or a device would block or never end the read (pyarrow
            # calls them Unknown, local or file://).
            if _is_uri(path):
                info = fs.get_file_info(inner)
                regular, size = info.type in (pafs.FileType.File, pafs.FileType.NotFound), info.size or 0
            else:
                st = os.stat(path)
                regular, size = stat.S_ISREG(st.st_mode), st.st_size
            if not regular:
                row["error"] = f"{path}: cannot read it: not a regular file"
                return row
            if size > MAX_FILE_BYTES:
                row["error"] = (f"{path}: cannot read it: {size} bytes, more than the {MAX_FILE_BYTES >> 20} MiB a "
                                "worker reads at once (split it)")
                return row
            with fs.open_input_stream(inner) as f:
                data = f.read()
        except (OSError, ValueError, MemoryError, pa.ArrowException) as e:  # ValueError: a name no file system takes
            row["error"] = f"{path}: cannot read it: {type(e).__name__ if isinstance(e, MemoryError) else e}"
            return row
        try:
            # The package's WAV reader, the CLI's reading of a WAV file.
            samples = self._tarn.decode_wav(data, self._rate, name=path)
            row.update(self._transcribe(samples, path))
        except (ValueError, self._tarn.Error) as e:
            named = str(e).startswith((path + ": ", path + ", "))
            row["error"] = str(e) if named else f"{path}: {e}"
            return row
        except Exception as e:  # noqa: BLE001 - one file must not end a run over an archive
            row["error"] = f"{path}: {type(e).__name__}: {e}"
            return row
        if row["duration"]:
            row["rtf"] = (time.perf_counter() - start) / row["duration"]
        return row

    def __call__(self, batch: pa.Table) -> pa.Table:
        rows = [self._row(path) for path in batch.column("path").to_pylist()]
        return pa.Table.from_pylist(rows, schema=ROW_SCHEMA)


# A worker that dies (out of memory, a native crash) is restarted, and its
# batch tried again, at most this many times in the run (Ray counts an
# actor's restarts over its life, not per batch): its next death stops the
# run. Ray Data's default, -1 for both, retries a batch that kills its
# worker forever.
WORKER_RESTARTS = 2


def build_pipeline(paths: Sequence[str], model: str, workers: int, batch_size: int, words=None, beam=None, chunk_ms=100,
                   transcriber=None):
    """The Ray Data pipeline: a Dataset of rows, one per path. transcriber:
    the callable class, Transcriber or a subclass of it."""
    import ray

    # Enough blocks that every actor gets work; each block is one or a few batches.
    blocks = max(1, min(len(paths), math.ceil(len(paths) / batch_size)))
    files = ray.data.from_items([{"path": p} for p in paths], override_num_blocks=blocks)
    with warnings.catch_warnings():
        # Ray 2.60 takes max_restarts and max_task_retries for the actors only
        # as ray_remote_args, which it calls deprecated for named parameters
        # that do not include these two.
        warnings.filterwarnings("ignore", message="`ray_remote_args` is deprecated", category=DeprecationWarning)
        return files.map_batches(
            transcriber or Transcriber,
            fn_constructor_args=(model, words, beam, chunk_ms),
            batch_size=batch_size,
            batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(size=workers),
            num_cpus=1,
            max_restarts=WORKER_RESTARTS,
            max_task_retries=WORKER_RESTARTS,
        )


class _Writer:
    """Rows to one .jsonl or .parquet file, as the batches stream in."""

    def __init__(self, path: str):
        self._parquet = path.endswith(".parquet")
        if self._parquet:
            self._out = pq.ParquetWriter(path, ROW_SCHEMA)
        else:
            self._out = open(path, "w")

    def write(self, batch: pa.Table) -> None:
        if self._parquet:
            self._out.write_table(batch.cast(ROW_SCHEMA))
        else:
            for row in batch.to_pylist():
                self._out.write(json.dumps(row) + "\n")

    def close(self) -> None:
        self._out.close()


def rows_differ(listed: Sequence[str], written: Sequence[str]) -> Optional[str]:
    """None if the rows written are exactly the files listed, in order (one
    row per file); else what is wrong, naming how many files have no row."""
    if list(written) == list(listed):
        return None
    missing = collections.Counter(listed) - collections.Counter(written)
    extra = collections.Counter(written) - collections.Counter(listed)
    what = f"{sum(missing.values())} of the {len(listed)} files listed have no row"
    if extra:
        what += f", {sum(extra.values())} rows are of no file listed or repeat one"
    if not missing and not extra:
        what += ", but the rows are not in the order of the files"
    return what


class _ArgumentParser(argparse.ArgumentParser):
    def error(self, message):
        """A bad command line exits 1, as every run that did not happen
        does: 2 says that some files are error rows."""
        self.print_usage(sys.stderr)
        self.exit(1, f"{self.prog}: error: {message}\n")


def main(argv=None) -> int:
    parser = _ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model", help="a speech .tarn model (local path or URI)")
    parser.add_argument("audio", help="a directory, a manifest (.txt/.tsv/.jsonl) or a file; local or a URI")
    parser.add_argument("--out", required=True, help="results: a .jsonl or .parquet file")
    parser.add_argument("--workers", type=int, default=2, help="Ray actors, each with one model (1 CPU each)")
    parser.add_argument("--batch-size", type=int, default=16, help="files per map_batches call")
    parser.add_argument("--address", default=None,
                        help="the Ray cluster to join, or `local` for a new one on this machine "
                             "(default: $RAY_ADDRESS, as `ray job submit` sets it, else local)")
    parser.add_argument("--num-cpus", type=int, default=None, help="CPUs of a new local cluster (default: all)")
    parser.add_argument("--ext", default=".wav", help="files taken from a directory (default .wav)")
    parser.add_argument("--words", help="a word list, one per line, as `tarn transcribe --words`")
    parser.add_argument("--beam", type=int, default=None, help="beam width (default greedy, or 8 with --words)")
    parser.add_argument("--chunk-ms", type=int, default=100, help="audio fed per call, as `tarn transcribe`")
    args = parser.parse_args(argv)
    if not args.out.endswith((".jsonl", ".parquet")):
        parser.error("--out must end in .jsonl or .parquet")
    for name in ("workers", "batch_size", "num_cpus"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, not {value}")
    if not 10 <= args.chunk_ms <= 100:
        parser.error(f"--chunk-ms must be in [10, 100], as tarn transcribe's, not {args.chunk_ms}")

    import ray

    words = None
    if args.words:
        try:
            words = read_words(args.words)
        except (OSError, ValueError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
    paths = list_audio(args.audio, args.ext.lower())
    if not paths:
        print(f"{args.audio}: no {args.ext} files", file=sys.stderr)
        return 1
    # What every worker will make, made once here: options the recognizer
    # refuses (a word its labels cannot spell) end the run with the
    # recognizer's message before any worker starts, not as a dead actor.
    import tarn

    local_model = _local_model(args.model)
    try:
        tarn.Recognizer(tarn.Model(local_model), words=words, beam=args.beam)
    except tarn.Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        if local_model != args.model:
            os.unlink(local_model)

    # Workers import tarn and this module from the driver's Python (the venv):
    # on a real cluster, the image or runtime_env provides both.
    address = args.address or ("local" if "RAY_ADDRESS" not in os.environ else None)
    local = address == "local"
    ray.init(address=address, num_cpus=args.num_cpus if local else None, include_dashboard=False if local else None)
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = True
    context.execution_options.preserve_order = True  # rows in the order of the files
    dataset = build_pipeline(paths, args.model, args.workers, args.batch_size, words, args.beam, args.chunk_ms)

    start = time.perf_counter()
    first = None  # when the first rows arrived: the workers had started
    writer = _Writer(args.out)
    written: List[str] = []  # the rows' paths, in the order written
    errors = after_first = 0
    audio = busy = 0.0
    try:
        for batch in dataset.iter_batches(batch_size=None, batch_format="pyarrow"):
            writer.write(batch)
            written += batch.column("path").to_pylist()
            if first is None:
                first = time.perf_counter()
            else:
                after_first += batch.num_rows
            errors += batch.num_rows - batch.column("error").null_count
            for duration, rtf in zip(batch.column("duration").to_pylist(), batch.column("rtf").to_pylist()):
                if duration:
                    audio += duration
                    busy += duration * rtf
    except ray.exceptions.RayError as e:
        # A worker that died 1 + WORKER_RESTARTS times (on any batches), or a
        # cluster that went away. Ray has logged the whole story.
        cause = (str(e).strip().splitlines() or [""])[0]
        print(f"error: the run stopped ({type(e).__name__}: {cause}), a worker having died {1 + WORKER_RESTARTS} "
              f"times (out of memory? a crash on a file?) or the cluster having failed; {len(written)} of the "
              f"{len(paths)} files' rows were written to {args.out}, {len(paths) - len(written)} files have no row",
              file=sys.stderr)
        return 1
    finally:
        writer.close()
    end = time.perf_counter()
    wall = end - start
    files = len(written)
    steady = f"{after_first / (end - first):.2f} files/s" if after_first and end > first else "-"
    print(
        f"{files} files ({errors} errors), {audio:.1f} s of audio in {wall:.1f} s with {args.workers} worker(s): "
        f"{files / wall:.2f} files/s, {audio / wall:.1f} hours of audio per hour; after the first rows "
        f"(workers started) {steady}; workers busy {busy:.1f} s in all; load average "
        f"{os.getloadavg()[0]:.1f}; rows in {args.out}",
        file=sys.stderr,
    )
    problem = rows_differ(paths, written)
    if problem:
        print(f"error: {args.out}: {problem}", file=sys.stderr)
        return 1
    return 2 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
