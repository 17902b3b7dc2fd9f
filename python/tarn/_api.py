"""The Python API over the extension tarn._tarn: Model, Session, SessionBatch,
Recognizer and transcribe().

Inputs are checked here for what only Python knows (dtype, number of
dimensions), then handed to the runtime as they are when their layout allows
(float32/int32/int16, C-contiguous: no copy), and outputs are numpy arrays
the runtime writes into. Every failure is a tarn.Error carrying the runtime's
message; the GIL is released while the runtime computes.
"""

import collections.abc
import dataclasses
import math
import numbers
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _tarn
from ._errors import Error, InvalidArgumentError, IoError

PathLike = Union[str, bytes, "os.PathLike[str]"]
_PATH_TYPES = (str, bytes, os.PathLike)

# The largest values of the C++ types options cross as: uint32_t (widths,
# milliseconds, chunk sizes, stream counts) and int (thread counts).
_UINT32_MAX = 2**32 - 1
_INT_MAX = 2**31 - 1


def _call(function, *args):
    """Runs an extension call, turning nanobind's argument errors into ours."""
    try:
        return function(*args)
    except TypeError as e:
        raise InvalidArgumentError(str(e)) from None


def _native_order(array: np.ndarray) -> np.ndarray:
    """`array` in the machine's byte order: the other order holds the same
    values (np.frombuffer(data, ">i2"))."""
    native = array.dtype.newbyteorder("=")
    return array if array.dtype == native else array.astype(native)


def _array(value, dtype, what: str, ndim: Optional[int] = None) -> np.ndarray:
    """`value` as a C-contiguous array of `dtype`, copied only if it is not
    one already; refuses another dtype instead of converting silently."""
    if not isinstance(value, np.ndarray):
        # Lists and scalars of numbers take a float dtype (integers too:
        # [0] * n is a frame of zeros); numpy arrays must already have it.
        value = np.asarray(value)
        if value.dtype.kind in "fiu" and np.dtype(dtype).kind == "f":
            value = value.astype(dtype)
    array = _native_order(value)
    if array.dtype != dtype:
        if array.size == 0 and array.dtype == np.float64:
            array = array.astype(dtype)  # np.asarray([]) is float64
        elif np.issubdtype(dtype, np.integer) and np.issubdtype(array.dtype, np.integer):
            info = np.iinfo(dtype)
            if array.size and (array.min() < info.min or array.max() > info.max):
                raise InvalidArgumentError(f"{what}: values outside {dtype.__name__} ({array.min()}..{array.max()})")
            array = array.astype(dtype)
        else:
            raise InvalidArgumentError(f"{what}: expected {np.dtype(dtype).name} values, got {array.dtype.name}")
    if ndim is not None and array.ndim != ndim:
        raise InvalidArgumentError(f"{what}: expected {ndim} dimension(s), got shape {array.shape}")
    return np.ascontiguousarray(array)


def _model_native(model, what: str):
    if not isinstance(model, Model):
        raise InvalidArgumentError(f"{what}: model is a {type(model).__name__}, not a tarn.Model")
    return model._native


def _counts(what: str, maximum: int = _UINT32_MAX, **values) -> None:
    """Refuses, by name, an option that is not an int in [0, maximum] (the
    largest value of the C++ type it crosses as: nanobind would refuse a
    larger one without naming it)."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise InvalidArgumentError(f"{what}: {name} is {value!r}; it must be an int >= 0")
        if value > maximum:
            raise InvalidArgumentError(f"{what}: {name} is {value}; it must be at most {maximum}")


def _sequence(value, what: str, kind: str) -> list:
    """`value`'s items as a list, refusing, by name, one string (a sequence
    of characters, never meant as one) or a value that is not a sequence."""
    if isinstance(value, (str, bytes)):
        raise InvalidArgumentError(f"{what}: give a list of {kind}, not one string")
    if not isinstance(value, collections.abc.Iterable):
        raise InvalidArgumentError(f"{what} is a {type(value).__name__}, not a list of {kind}")
    return list(value)


def _number(what: str, name: str, value) -> float:
    """`value` as a float, refusing, by name, one that is not a real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgumentError(f"{what}: {name} is {value!r}; it must be a number")
    try:
        return float(value)
    except OverflowError:  # an int beyond a double's range, e.g. 10**400
        raise InvalidArgumentError(f"{what}: {name} is {value!r}, beyond a float's range") from None


def _natives(sessions, what: str) -> list:
    """The native sessions of a batch call's `sessions`, each a Session."""
    natives = []
    for i, session in enumerate(_sequence(sessions, f"{what}: sessions", "tarn.Session")):
        if not isinstance(session, Session):
            raise InvalidArgumentError(f"{what}: sessions[{i}] is a {type(session).__name__}, not a tarn.Session")
        natives.append(session._native)
    return natives


def _output(out: Optional[np.ndarray], shape: Tuple[int, ...], what: str, fill: Optional[float] = None) -> np.ndarray:
    """`out` checked, or a new array (of `fill` where the runtime may leave
    rows unwritten)."""
    if out is None:
        return np.empty(shape, np.float32) if fill is None else np.full(shape, fill, np.float32)
    if not isinstance(out, np.ndarray) or out.dtype != np.float32 or not out.flags.c_contiguous:
        raise InvalidArgumentError(f"{what}: out must be a C-contiguous float32 numpy array")
    if not out.flags.writeable:
        raise InvalidArgumentError(f"{what}: out is read-only")
    if out.shape != tuple(shape):
        raise InvalidArgumentError(f"{what}: out has shape {out.shape}; it must be {tuple(shape)}")
    return out


class _NativeHandle:
    """A class whose objects hold native memory, which pickle cannot carry
    and a shallow copy would silently share: both are refused, with what to
    do instead (_not_copied), unless the class defines __copy__."""

    _not_copied = ""

    def __reduce_ex__(self, protocol):
        raise InvalidArgumentError(f"a tarn.{type(self).__name__} cannot be {self._not_copied}")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """A loaded model's architecture, as stored in its file (tarn::ModelConfig)."""

    input_kind: str  # "tokens" or "frames"
    vocab_size: int
    embedding_scale: float
    input_dim: int
    stack_window: int
    stack_hop: int
    input_projection: bool
    input_activation: str
    position: str
    max_positions: int
    d_model: int
    num_layers: int
    num_heads: int
    d_key: int
    d_value: int
    d_ff: int
    activation: str
    norm_placement: str
    norm_eps: float
    causal: bool
    feature_map: str
    feature_dim: int
    attention_eps: float
    favor_softmax_temp: float
    favor_stabilize: bool
    conv_kernel: int
    final_norm: bool
    output_dim: int
    labels: Tuple[str, ...]
    position_concat_dim: int
    output_distribution: str
    output_levels: int

    def to_dict(self) -> Dict[str, object]:
        """The fields as a dict (labels as a list)."""
        d = dataclasses.asdict(self)
        d["labels"] = list(self.labels)
        return d


class Model(_NativeHandle):
    """A .tarn model, mapped and validated completely on load.

    Immutable once loaded: any number of sessions, batches and recognizers on
    any number of threads may share it. close() (or leaving a `with` block)
    releases it: using it afterwards raises tarn.Error, and the file stays
    mapped until the last session made from it is gone. The weights are read
    from the mapping in place, so meanwhile the file must not be truncated
    (the process dies of SIGBUS) or rewritten in place (the weights change
    under the model); renaming a new file over it, or deleting it, is safe.

        with tarn.Model("model.tarn") as model:
            session = model.session()
            logits = session.step_token(3)

    int8: how the dense layers of an int8 file compute. "exact" (the
    default) widens each weight and keeps the activations in f32, so the
    model keeps its f32 accuracy; "dot" quantises each row of activations to
    int8 and uses integer dot products: faster, with the activations'
    rounding as well (`tarn ... --int8 dot`). Other files ignore it.
    verify_checksum: hash the file and compare with its checksum (the whole
    file's, schema 2.1; the weights' in an older file).
    copy.copy() and copy.deepcopy() give the model itself (it is immutable
    and shared); pickling is refused (load the file again where needed).
    """

    _not_copied = "pickled: it is a mapped file; load it again from its path (model.path) where it is needed"

    def __init__(self, path: PathLike, *, int8: str = "exact", verify_checksum: bool = True):
        if not isinstance(path, _PATH_TYPES):
            raise InvalidArgumentError(f"Model: the path is a {type(path).__name__}, not a str, bytes or os.PathLike")
        self._path = os.fspath(path)
        # The file system's bytes, so that any name open() takes loads.
        native_path = os.fsencode(self._path)
        if b"\0" in native_path:
            raise InvalidArgumentError(f"the model path {self._path!r} holds a NUL character")
        self._native = _call(_tarn.Model, native_path, int8, bool(verify_checksum))
        self._config: Optional[ModelConfig] = None

    @property
    def path(self) -> str:
        return self._path

    @property
    def closed(self) -> bool:
        return self._native.closed

    def close(self) -> None:
        """Releases the model; sessions made from it keep working."""
        self._native.close()

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __copy__(self) -> "Model":
        return self

    def __deepcopy__(self, memo) -> "Model":
        return self

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{self.parameter_count} parameters"
        return f"tarn.Model({self.path!r}, {state})"

    @property
    def config(self) -> ModelConfig:
        """The architecture (a frozen dataclass; .to_dict() for a dict)."""
        if self._config is None:
            d = self._native.config()
            d["labels"] = tuple(d["labels"])
            self._config = ModelConfig(**d)
        elif self.closed:
            self._native.config()  # raises
        return self._config

    @property
    def output_size(self) -> int:
        """Width of one step's output: output_dim, or d_model without a head."""
        return self._native.output_size()

    @property
    def frame_size(self) -> int:
        """Width of one frame (frame models); 0 for token models."""
        return self._native.frame_size()

    @property
    def parameter_count(self) -> int:
        return self._native.parameter_count()

    @property
    def weight_bytes(self) -> int:
        """Bytes of weights as stored in the file."""
        return self._native.weight_bytes()

    @property
    def weight_bytes_by_dtype(self) -> dict:
        """weight_bytes split by how the file stores them, e.g. {"i8": ...,
        "f32": ...} (the converter's --dtype for the matrices; vectors, norms
        and int8 scales stay f32); dtypes the file does not use are left out."""
        return self._native.weight_bytes_by_dtype()

    def session_bytes(self, max_prefill_chunk: int = 64) -> int:
        """Bytes of one session's memory (state and scratch); 0 for a
        max_prefill_chunk a session cannot have."""
        _counts("session_bytes", max_prefill_chunk=max_prefill_chunk)
        return _call(self._native.session_bytes, max_prefill_chunk)

    @property
    def snapshot_bytes(self) -> int:
        """Bytes of Session.snapshot()."""
        return self._native.snapshot_bytes()

    @property
    def identity(self) -> int:
        """A hash of the configuration and weights; snapshots carry it."""
        return self._native.identity()

    @property
    def schema_version(self) -> Tuple[int, int]:
        """(major, minor): the schema version the file was written in."""
        return self._native.schema_version()

    @property
    def audio(self) -> Optional[Dict[str, Any]]:
        """A speech model's feature recipe (sample_rate, num_mel_bins, ...,
        and warp: a speaker's model's vocal tract warp, else 1), as its file
        stores it; None for a model that takes no audio."""
        return self._native.audio()

    @property
    def metadata(self) -> Dict[str, str]:
        """Free-form provenance from the file (source, converter version, ...)."""
        return self._native.metadata()

    def session(self, num_threads: int = 1, max_prefill_chunk: int = 64) -> "Session":
        """A new session of this model (see Session)."""
        return Session(self, num_threads=num_threads, max_prefill_chunk=max_prefill_chunk)


class Session(_NativeHandle):
    """One stream's recurrent state: step it, prefill it, snapshot it.

    Its memory is allocated once (Model.session_bytes()) and never grows.
    A session is used by one thread at a time (another thread using it at
    the same time gets tarn.Error); give each thread its own: they step in
    parallel, the GIL released. num_threads: threads for its dense layers,
    at most one per usable core (more run as that many, with the same bits).
    copy.copy() and copy.deepcopy() are clone(); pickling is refused
    (snapshot() is the state as bytes).
    """

    _not_copied = (
        "pickled: its state is native memory; pickle session.snapshot() (bytes) and restore() it into a session "
        "of the same model"
    )

    def __init__(self, model: Model, num_threads: int = 1, max_prefill_chunk: int = 64):
        native = _model_native(model, "Session")
        _counts("Session", _INT_MAX, num_threads=num_threads)
        _counts("Session", max_prefill_chunk=max_prefill_chunk)
        self._model = model
        self._native = _call(_tarn.Session, native, num_threads, max_prefill_chunk)
        # Kept: a session outlives its model's close().
        self._config = model.config
        self._output_size = model.output_size
        self._frame_size = model.frame_size

    @property
    def model(self) -> Model:
        return self._model

    @property
    def position(self) -> int:
        """Steps taken since creation or the last reset()."""
        return self._native.position

    def step_token(self, token: int, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Feeds one token; returns the step's output [output_size] float32
        (written into `out` when given)."""
        out = _output(out, (self._output_size,), "step_token")
        if not isinstance(token, (int, np.integer)) or isinstance(token, bool):
            raise InvalidArgumentError(f"step_token: a token is an int, not {type(token).__name__}")
        if not -(2**31) <= int(token) < 2**31:
            raise InvalidArgumentError(f"step_token: token {token} is out of range: token ids are 32-bit")
        _call(self._native.step_token, int(token), out)
        return out

    def step_frame(self, frame, out: Optional[np.ndarray] = None) -> Optional[np.ndarray]:
        """Feeds one frame [frame_size] float32. With frame stacking the model
        steps once every stack_hop frames: returns the output [output_size],
        or None when this frame made no step."""
        frame = _array(frame, np.float32, "step_frame", 1)
        out = _output(out, (self._output_size,), "step_frame")
        return out if _call(self._native.step_frame, frame, out) else None

    def prefill(self, inputs, outputs: bool = False) -> Optional[np.ndarray]:
        """Feeds tokens [T] (integers) or frames [T, frame_size] (float32) as
        if stepped one by one, in chunks: the state afterwards and the
        outputs are bit for bit those of stepping. Returns the outputs
        [steps, output_size] when `outputs`, else None (the cheapest)."""
        if self._config.input_kind == "tokens":
            tokens = _array(inputs, np.int32, "prefill", 1)
            out = np.empty((len(tokens), self._output_size), np.float32) if outputs else None
            _call(self._native.prefill_tokens, tokens, out)
            return out
        frames = self._frames(inputs, "prefill")
        out = None
        if outputs:
            out = np.empty((self._native.steps_for_frames(len(frames)), self._output_size), np.float32)
        _call(self._native.prefill_frames, frames, len(frames), out)
        return out

    def encode(self, inputs) -> np.ndarray:
        """A bidirectional model's outputs [steps, output_size] for a whole
        sequence of tokens [T] or frames [T, frame_size]."""
        if self._config.input_kind == "tokens":
            tokens = _array(inputs, np.int32, "encode", 1)
            out = np.empty((len(tokens), self._output_size), np.float32)
            _call(self._native.encode_tokens, tokens, out)
            return out
        frames = self._frames(inputs, "encode")
        c = self._config
        steps = 0 if len(frames) < c.stack_window else (len(frames) - c.stack_window) // c.stack_hop + 1
        out = np.empty((steps, self._output_size), np.float32)
        steps = _call(self._native.encode_frames, frames, len(frames), out)
        return out[:steps]

    def _frames(self, inputs, what: str) -> np.ndarray:
        frames = _array(inputs, np.float32, what, 2)
        if frames.shape[1] != self._frame_size:
            raise InvalidArgumentError(
                f"{what}: frames are [T, {self._frame_size}] for this model, got shape {frames.shape}"
            )
        return frames

    def reset(self) -> None:
        """Back to the state of a new session."""
        self._native.reset()

    def snapshot(self) -> bytes:
        """The session's state as bytes (Model.snapshot_bytes of them)."""
        return self._native.snapshot()

    def restore(self, snapshot: Union[bytes, bytearray, memoryview]) -> None:
        """Replaces the state with a snapshot's (of this model only); it then
        continues bit for bit as the session snapshotted."""
        if not isinstance(snapshot, (bytes, bytearray, memoryview)):
            raise InvalidArgumentError(f"restore: a snapshot is bytes, not {type(snapshot).__name__}")
        _call(self._native.restore, bytes(snapshot))

    def clone(self) -> "Session":
        """A new session in this one's state."""
        clone = Session.__new__(Session)
        clone.__dict__.update(self.__dict__)
        clone._native = self._native.clone()
        return clone

    # A copy sharing the native session would step both: a copy is a clone.
    def __copy__(self) -> "Session":
        return self.clone()

    def __deepcopy__(self, memo) -> "Session":
        return self.clone()

    def attention_state(self, layer: int) -> Tuple[np.ndarray, np.ndarray]:
        """Copies of one layer's attention state: S [heads, C, d_value] and
        z [heads, C]."""
        layers = self._config.num_layers
        if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)):
            raise InvalidArgumentError(f"attention_state: layer is {layer!r}; it must be an int")
        if not 0 <= layer < layers:
            raise InvalidArgumentError(
                f"attention_state: layer {layer} is out of range: the model has layers 0 to {layers - 1}"
            )
        return _call(self._native.attention_state, int(layer))


class SessionBatch(_NativeHandle):
    """Steps many sessions of one model in one call; each result is bit for
    bit that of stepping the session alone."""

    _not_copied = "pickled or copied: its scratch is native memory; make another with tarn.SessionBatch(model)"

    def __init__(self, model: Model, max_streams: int = 16, num_threads: int = 1):
        native = _model_native(model, "SessionBatch")
        _counts("SessionBatch", max_streams=max_streams)
        _counts("SessionBatch", _INT_MAX, num_threads=num_threads)
        self._model = model
        self._native = _call(_tarn.SessionBatch, native, max_streams, num_threads)
        self._output_size = model.output_size
        self._frame_size = model.frame_size

    @property
    def max_streams(self) -> int:
        return self._native.max_streams

    def step_tokens(self, sessions: Sequence[Session], tokens, out: Optional[np.ndarray] = None) -> np.ndarray:
        """Steps sessions[i] with tokens[i]; returns outputs [n, output_size]."""
        natives = _natives(sessions, "step_tokens")
        tokens = _array(tokens, np.int32, "step_tokens", 1)
        out = _output(out, (len(natives), self._output_size), "step_tokens")
        _call(self._native.step_tokens, natives, tokens, out)
        return out

    def step_frames(self, sessions: Sequence[Session], frames, out: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
        """Feeds frames[i] ([n, frame_size] float32) to sessions[i]; returns
        (outputs [n, output_size], stepped [n] bool): row i is written where
        session i stepped; the other rows are NaN (with `out` given, they
        are left as they were)."""
        natives = _natives(sessions, "step_frames")
        frames = _array(frames, np.float32, "step_frames", 2)
        if frames.shape != (len(natives), self._frame_size):
            raise InvalidArgumentError(
                f"step_frames: frames are [{len(natives)}, {self._frame_size}] (a frame per session) for this model, "
                f"got shape {frames.shape}"
            )
        out = _output(out, (len(natives), self._output_size), "step_frames", fill=np.nan)
        stepped = _call(self._native.step_frames, natives, frames, out)
        return out, np.array(stepped, dtype=bool)


@dataclasses.dataclass(frozen=True)
class Word:
    """A recognised word and its span, seconds since the stream started."""

    word: str
    start: float
    end: float


@dataclasses.dataclass(frozen=True)
class Result:
    """An utterance's (or a whole stream's) words and their text."""

    text: str
    words: Tuple[Word, ...] = ()
    start: float = 0.0
    end: float = 0.0
    duration: float = 0.0  # transcribe(): seconds of audio

    @classmethod
    def _from(cls, d: dict) -> "Result":
        words = tuple(Word(w, s, e) for w, s, e in d["words"])
        return cls(d["text"], words, d["start"], d["end"])


#: Beam width with a word list when none is given (as `tarn transcribe`).
DEFAULT_WORD_LIST_BEAM = 8
DEFAULT_HOTWORD_BOOST = _tarn.DEFAULT_HOTWORD_BOOST  # nats per label


def _hotword_list(hotwords) -> List[Tuple[str, float]]:
    """[(phrase, boost)] from a list of phrases or pairs, or a dict."""
    if hotwords is None:
        return []
    if isinstance(hotwords, (str, bytes)):
        raise InvalidArgumentError("hotwords: give a list of phrases (or a dict phrase -> boost), not one string")
    if not isinstance(hotwords, collections.abc.Iterable):
        raise InvalidArgumentError(
            f"hotwords is a {type(hotwords).__name__}, not a list of phrases (or a dict phrase -> boost)"
        )
    items = hotwords.items() if isinstance(hotwords, dict) else hotwords
    out = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            phrase, boost = item, None
        elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
            phrase, boost = item
        else:
            raise InvalidArgumentError(f"hotwords[{i}] is {item!r}: give a phrase or a (phrase, boost) pair")
        try:
            out.append((phrase, 0.0 if boost is None else float(boost)))
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"hotwords[{i}]: the boost of {phrase!r} is {boost!r}, not a number") from None
    return out


def _word_list(words) -> List[str]:
    """The words of a word list, each a str; None: no list."""
    if words is None:
        return []
    out = _sequence(words, "words", "words")
    for i, word in enumerate(out):
        if not isinstance(word, str):
            raise InvalidArgumentError(f"words[{i}] is a {type(word).__name__}, not a str")
    if not out:
        raise InvalidArgumentError("words: the list is empty (leave words out for no list)")
    return out


class Recognizer(_NativeHandle):
    """Streaming speech recognition with a CTC speech model.

        recognizer = tarn.Recognizer(model)
        for chunk in chunks:                    # int16 or float32, any size
            recognizer.accept(chunk)
            for result in recognizer.pop_results():
                print(result.text, result.words)
        print(recognizer.final_result().text)

    words: a list of words the beam search is constrained to (beam defaults
    to 8 with words, greedy without). hotwords: phrases the beam search
    favours without forbidding other words (beam defaults to 8 with them):
    a list of phrases, of (phrase, boost) pairs, or a dict phrase -> boost;
    boosts in nats per label, 0 or None for hotword_boost. An utterance ends
    (an endpoint) after endpoint_ms of non-speech following speech, or at
    max_utterance_ms (0: at 4096 model steps, where the decoder's fixed
    memory ends). final_result(), and an utterance that reaches
    max_utterance_ms, first step the model over final_silence_ms of silence,
    so that an utterance cut right after its last word keeps it (the model
    emits a word's labels a few steps after its audio); the utterance after
    an endpoint hears that much of its silence again, so that a word begun
    as the endpoint fell keeps its start. warp: the speaker's
    vocal tract warp (0: the model's own, none unless it is a speaker's model
    from adapt.py; 1: none; see estimate_warp).

    transcribe() runs tarn.transcribe's loop over a whole file or array on
    this recognizer (one per worker, reused file after file).
    """

    _not_copied = "pickled or copied: its state is native memory; make another with tarn.Recognizer(model, ...)"

    def __init__(
        self,
        model: Model,
        words: Optional[Sequence[str]] = None,
        beam: Optional[int] = None,
        endpoint_ms: int = 500,
        max_utterance_ms: int = 30000,
        reset_after_silence_ms: int = 2000,
        threads: int = 1,
        beam_prune: float = 20.0,
        hotwords: Optional[Union[Sequence[Union[str, Tuple[str, float]]], Dict[str, float]]] = None,
        hotword_boost: float = DEFAULT_HOTWORD_BOOST,
        final_silence_ms: int = 300,
        warp: float = 0.0,
    ):
        native = _model_native(model, "Recognizer")
        _counts("Recognizer", endpoint_ms=endpoint_ms, max_utterance_ms=max_utterance_ms,
                reset_after_silence_ms=reset_after_silence_ms, final_silence_ms=final_silence_ms,
                **({} if beam is None else {"beam": beam}))
        _counts("Recognizer", _INT_MAX, threads=threads)
        words = _word_list(words)
        phrases = _hotword_list(hotwords)
        if (words or phrases) and beam in (0, 1):
            what = "words" if words else "hotwords"
            raise InvalidArgumentError(
                f"{what} need the beam search: give beam 2 or more (or leave it out for {DEFAULT_WORD_LIST_BEAM})"
            )
        if beam is None:
            beam = DEFAULT_WORD_LIST_BEAM if words or phrases else 0
        self._model = model
        self._native = _call(
            _tarn.Recognizer,
            native,
            beam,
            words,
            endpoint_ms,
            max_utterance_ms,
            reset_after_silence_ms,
            threads,
            _number("Recognizer", "beam_prune", beam_prune),
            phrases,
            _number("Recognizer", "hotword_boost", hotword_boost),
            final_silence_ms,
            _number("Recognizer", "warp", warp),
        )

    @property
    def sample_rate(self) -> int:
        return self._native.sample_rate

    @property
    def step_seconds(self) -> float:
        """Seconds of audio per model step."""
        return self._native.step_seconds

    def accept(self, samples) -> None:
        """Feeds mono audio at sample_rate: int16 PCM, or float32 in [-1, 1)."""
        _accept(self._native, samples)

    def pop_result(self) -> Optional[Result]:
        """The oldest utterance that ended at an endpoint, or None."""
        d = self._native.pop_result()
        return None if d is None else Result._from(d)

    def pop_results(self) -> List[Result]:
        """Every queued utterance, oldest first."""
        results = []
        while (r := self.pop_result()) is not None:
            results.append(r)
        return results

    @property
    def queued_results(self) -> int:
        return self._native.queued_results

    def partial_result(self) -> Result:
        """The utterance in progress, as decoded so far."""
        return Result._from(self._native.partial_result())

    def final_result(self) -> Result:
        """Ends the utterance in progress (end of stream) and returns it."""
        return Result._from(self._native.final_result())

    def reset(self) -> None:
        """Audio, queue and clock cleared, as in a new recognizer; the warp
        set_warp() set is kept."""
        self._native.reset()

    def set_warp(self, warp: float) -> None:
        """The speaker's vocal tract warp from the next frame on (e.g. once
        estimate_warp has heard enough of them); call it between utterances.
        0: the model's own."""
        _call(self._native.set_warp, _number("set_warp", "warp", warp))

    def stats(self) -> Dict[str, float]:
        """Samples, steps, utterances, audio and processing seconds, latency."""
        return self._native.stats()

    def transcribe(
        self, audio: Union[PathLike, np.ndarray], *, chunk_ms: int = 100, name: Optional[str] = None
    ) -> Result:
        """tarn.transcribe() on this recognizer, its options (and warp) as
        they are: reset(), then the audio (a WAV path, or samples as
        accept() takes them) fed in chunks of chunk_ms, each utterance
        popped as it ends, then final_result(). The result's text is the
        utterances joined by spaces, its words every word with times, its
        duration the seconds of audio. A chunk refused raises its error
        prefixed with where the chunk began, as `tarn transcribe` says it:
        "NAME, the chunk from sample 8000 (0.500 s): ..." (name: the path's,
        else "the samples")."""
        rate = self.sample_rate
        chunk = _chunk_samples(chunk_ms, rate)
        if isinstance(audio, _PATH_TYPES):
            samples = read_wav(audio, rate)
            name = os.fsdecode(audio) if name is None else name
        else:
            samples = _samples(audio, "transcribe")
            name = "the samples" if name is None else name
        self.reset()
        texts: List[str] = []
        words: List[Word] = []

        def emit(result: Result) -> None:
            if result.words:
                texts.append(result.text)
                words.extend(result.words)

        for begin in range(0, len(samples), chunk):
            try:
                self.accept(samples[begin : begin + chunk])
            except Error as e:
                # The runtime counts samples within the call: say where it began.
                raise type(e)(f"{name}, the chunk from sample {begin} ({begin / rate:.3f} s): {e}") from None
            for result in self.pop_results():
                emit(result)
        emit(self.final_result())
        duration = self.stats()["audio_seconds"]
        return Result(" ".join(texts), tuple(words), 0.0, duration, duration)


def _chunk_samples(chunk_ms, rate: int) -> int:
    """Samples in a chunk of chunk_ms, refusing what `tarn transcribe` does."""
    _counts("transcribe", chunk_ms=chunk_ms)
    if not 10 <= chunk_ms <= 100:
        raise InvalidArgumentError(f"chunk_ms {chunk_ms} is outside [10, 100]")
    return max(1, rate * chunk_ms // 1000)


def _samples(samples, what: str) -> np.ndarray:
    """Mono int16 or float32 samples as a C-contiguous array in the
    machine's byte order; a list of numbers as float32, as _array takes it
    ([] is no samples)."""
    if isinstance(samples, (str, bytes)):
        raise InvalidArgumentError(f"{what}: samples are an array or a list of numbers, not a {type(samples).__name__}")
    array = np.asarray(samples)
    # int16 and float32 stay as they are (an array.array('h') or a
    # memoryview of int16 is PCM, scaled by accept); other numbers, a
    # list of floats above all, are float samples.
    if not isinstance(samples, np.ndarray) and array.dtype not in (np.int16, np.float32) and (
        array.dtype.kind in "fiu" or array.size == 0
    ):
        array = array.astype(np.float32)
    array = _native_order(array)
    if array.dtype not in (np.int16, np.float32):
        raise InvalidArgumentError(f"{what}: samples are int16 or float32, not {array.dtype.name}")
    if array.ndim != 1:
        raise InvalidArgumentError(f"{what}: samples are mono, one dimension; got shape {array.shape}")
    return np.ascontiguousarray(array)


def _accept(native, samples) -> None:
    """Feeds mono int16 or float32 samples to a native recognizer or warp
    estimator."""
    array = _samples(samples, "accept")
    _call(native.accept_int16 if array.dtype == np.int16 else native.accept_float, array)


class WarpEstimator(_NativeHandle):
    """estimate_warp fed as the audio arrives, so that a speaker's minutes of
    audio need not be kept: the model runs once per candidate warp alongside.

        estimator = tarn.WarpEstimator(model)
        for chunk in chunks:                 # int16 or float32, any size
            estimator.accept(chunk)
        estimator.end_utterance()            # the next audio starts afresh
        warp, scores = estimator.estimate()  # at any point; as estimate_warp
        recognizer.set_warp(warp)            # between utterances

    estimate() over everything heard so far, the current utterance as it
    stands, is what estimate_warp gives for the same utterances."""

    _not_copied = (
        "pickled or copied: its state is native memory; make another with tarn.WarpEstimator(model, candidates)"
    )

    def __init__(self, model: Model, candidates: Optional[Sequence[float]] = None):
        if candidates is None:
            # The runtime's defaults, float32, by their shortest decimals (0.85).
            candidates = [float(np.format_float_positional(c)) for c in np.float32(_tarn.default_warp_candidates())]
        candidates = _sequence(candidates, "WarpEstimator: candidates", "candidate warps")
        self._candidates = [_number("WarpEstimator", f"candidates[{i}]", c) for i, c in enumerate(candidates)]
        native = _model_native(model, "WarpEstimator")
        self._model = model
        self._native = _call(_tarn.WarpEstimator, native, self._candidates)

    def accept(self, samples) -> None:
        """More of the current utterance, mono at the model's sample rate:
        int16 PCM, or float32 in [-1, 1)."""
        _accept(self._native, samples)

    def end_utterance(self) -> None:
        """The audio after this starts another utterance, from a fresh state."""
        _call(self._native.end_utterance)

    def estimate(self) -> Tuple[float, Dict[float, float]]:
        """The warp and every candidate's score over everything heard; refused
        before the first model step (stack_window frames of one utterance:
        1,680 samples for the bundled model)."""
        warp, tried, scores = _call(self._native.estimate)
        # The candidates as given (the runtime holds them as float32).
        return self._candidates[list(tried).index(warp)], dict(zip(self._candidates, scores))


def estimate_warp(
    model: Model, utterances: Sequence[Union[PathLike, np.ndarray]], candidates: Optional[Sequence[float]] = None
) -> Tuple[float, Dict[float, float]]:
    """Speaker adaptation: the vocal tract warp for Recognizer(warp=...) and
    transcribe(warp=...), estimated from a speaker's utterances alone (WAV
    paths, or float32 samples in [-1, 1) at the model's rate): the candidate
    (default 0.85, 0.9, ..., 1.15) under which the model is most confident,
    i.e. with the largest mean log-probability of each step's most likely
    label. Returns the warp and every candidate's score. A few minutes of
    speech make it reliable."""
    if isinstance(utterances, _PATH_TYPES):
        raise InvalidArgumentError(f"estimate_warp: give a list of files or arrays, not one {type(utterances).__name__}")
    if not isinstance(utterances, collections.abc.Iterable):
        raise InvalidArgumentError(
            f"estimate_warp: utterances is a {type(utterances).__name__}, not a list of files or arrays"
        )
    estimator = WarpEstimator(model, candidates)  # refuses a model that cannot listen
    rate = model.audio["sample_rate"]
    for u in utterances:
        if isinstance(u, _PATH_TYPES):
            estimator.accept(read_wav(u, rate))
        else:
            estimator.accept(_array(u, np.float32, "utterance", ndim=1))
        estimator.end_utterance()
    return estimator.estimate()


# WAVE format tags: integer PCM, IEEE float, and the extensible header (a
# subformat GUID whose first two bytes are one of those), which sox and
# ffmpeg write for more than two channels or more than 16 bits.
_WAVE_PCM, _WAVE_FLOAT, _WAVE_EXTENSIBLE = 1, 3, 0xFFFE
_WAVE_ENCODINGS = {2: "MS ADPCM", 6: "A-Law", 7: "U-Law", 0x11: "IMA ADPCM", 0x55: "MPEG layer 3"}
# libsndfile's SF_MAX_CHANNELS: `tarn transcribe` reads no file with more.
_MAX_CHANNELS = 1024


def _whole_chunks(data: bytes, at: int) -> bool:
    """Whether data[at:] is whole RIFF chunks (4 printable characters and a
    size that ends within the data), as a finished file's chunks after its
    data chunk are; audio is not."""
    while at < len(data):
        if at + 8 > len(data) or not all(0x20 <= c <= 0x7E for c in data[at : at + 4]):
            return False
        if data[at : at + 4] == b"data":  # a second data chunk: libsndfile reads no such file
            return False
        at += 8 + int.from_bytes(data[at + 4 : at + 8], "little")
        if at > len(data):
            return False
        if at < len(data) and at & 1:
            at += 1
    return True


def decode_wav(data: bytes, sample_rate: Optional[int] = None, name: str = "the file") -> np.ndarray:
    """A WAV file's bytes as float32 mono samples, as `tarn transcribe`
    (libsndfile) reads them: integer PCM of 1 to 32 bits, left-justified in
    containers of their bits rounded up to whole bytes (24-bit samples in
    32-bit ones where a plain PCM header's block_align says 4 bytes a
    channel, where libsndfile guesses from the audio) and scaled by the
    container to [-1, 1) (12-bit samples in 16-bit containers as 16-bit, 24
    in 32 as 32), float samples as they are, channels averaged; the
    extensible header;
    a data chunk whose size a streaming writer left as ~0 read to the end.
    Refuses, naming `name`, what libsndfile refuses: not a WAV file,
    truncated, a data chunk that declares 0 bytes with audio after it, two
    fmt chunks before the data, two data chunks, more than 1024 channels; and another
    encoding, another rate than `sample_rate`, RF64 (which libsndfile reads).
    `data` is the file's bytes (read_wav takes a path)."""
    def refuse(what: str) -> InvalidArgumentError:
        return InvalidArgumentError(f"{name}: {what}")

    if isinstance(data, str):
        raise InvalidArgumentError("decode_wav: data is a str: give the file's bytes (read_wav takes a path)")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError(f"decode_wav: data is a {type(data).__name__}, not the file's bytes")
    data = bytes(data)
    if data[:4] == b"RF64":
        raise refuse("RF64 (WAV over 4 GB) is not read by decode_wav; `tarn transcribe` reads it")
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise refuse("cannot read it as audio: not a RIFF/WAVE file")
    fmt, pcm, pos = None, None, 12
    while pos + 8 <= len(data) and pcm is None:
        kind, size = data[pos : pos + 4], int.from_bytes(data[pos + 4 : pos + 8], "little")
        body = pos + 8
        if kind == b"fmt ":
            if fmt is not None:  # libsndfile reads no such file (one after the data it skips, as this does)
                raise refuse("cannot read it as audio: it has two fmt chunks")
            if size < 16 or body + size > len(data):
                raise refuse("cannot read it as audio: its fmt chunk is cut short")
            fmt = data[body : body + size]
        elif kind == b"data":
            if fmt is None:
                raise refuse("cannot read it as audio: its data chunk comes before its fmt chunk")
            # libsndfile reads to the end after a data size of ~0, and after
            # 0 when the RIFF size is 8 (a file "not closed properly").
            riff_size = int.from_bytes(data[4:8], "little")
            streamed = size >= 0xFFFFFFF0 or (size == 0 and riff_size == 8 and len(data) > 44)
            if size == 0 and not streamed and body < len(data) and not _whole_chunks(data, body):
                raise refuse(
                    f"its data chunk declares 0 bytes of audio but {len(data) - body} follow (a WAV written as a "
                    "stream, its sizes never filled in); rewrite its header, e.g. sox --ignore-length IN OUT.wav"
                )
            end = len(data) if streamed else body + size
            if end > len(data):
                raise refuse(
                    f"the file is truncated: its data chunk declares {size} bytes of audio "
                    f"but only {len(data) - body} are present"
                )
            pcm = data[body:end]
            if streamed:  # the audio runs to the end: no chunk after it
                pos = len(data)
                break
        pos = body + size + (size & 1)
    if fmt is None or pcm is None:
        raise refuse(f"cannot read it as audio: no {'fmt' if fmt is None else 'data'} chunk")
    # libsndfile opens no file with a second data chunk after the first:
    # read, its audio would be lost.
    while pos + 8 <= len(data):
        if data[pos : pos + 4] == b"data":
            raise refuse("cannot read it as audio: it has two data chunks")
        size = int.from_bytes(data[pos + 4 : pos + 8], "little")
        pos += 8 + size + (size & 1)
    tag, channels, rate = int.from_bytes(fmt[0:2], "little"), int.from_bytes(fmt[2:4], "little"), int.from_bytes(fmt[4:8], "little")
    block_align, bits = int.from_bytes(fmt[12:14], "little"), int.from_bytes(fmt[14:16], "little")
    if tag == _WAVE_EXTENSIBLE and len(fmt) >= 26:
        tag = int.from_bytes(fmt[24:26], "little")
    if tag not in (_WAVE_PCM, _WAVE_FLOAT):
        encoding = _WAVE_ENCODINGS.get(tag, f"format tag {tag:#x}")
        raise refuse(f"its encoding ({encoding}) is not supported; use linear PCM (8, 16, 24 or 32-bit) or float "
                     "samples, e.g. sox IN -e signed-integer -b 16 OUT.wav")
    if channels == 0:
        raise refuse("cannot read it as audio: it has no channels")
    if channels > _MAX_CHANNELS:
        raise refuse(f"cannot read it as audio: it has {channels} channels, more than the {_MAX_CHANNELS} "
                     "libsndfile (tarn transcribe) reads")
    if sample_rate is not None and rate != sample_rate:
        raise refuse(f"sampled at {rate} Hz, but the model expects {sample_rate} Hz; "
                     f"resample it first, e.g. sox IN -r {sample_rate} OUT.wav")
    if (tag == _WAVE_PCM and not 1 <= bits <= 32) or (tag == _WAVE_FLOAT and bits not in (32, 64)):
        raise refuse(f"{bits}-bit {'float' if tag == _WAVE_FLOAT else 'integer'} samples are not supported")
    # A sample's container, as libsndfile (tarn transcribe) takes it: its
    # bits rounded up to whole bytes, samples left-justified in it, and
    # block_align unread but in a plain PCM header (not the extensible one)
    # of 24-bit samples and 4 bytes a channel: ALSA's arecord writes 24-bit
    # samples in 32-bit containers so. There libsndfile guesses from the
    # audio (a vote over 4 KB of it) whether the containers are 3 or 4
    # bytes; this reads 4, so a recording too short or too quiet for its
    # vote can be read otherwise by the two.
    width = (bits + 7) // 8
    plain_pcm = int.from_bytes(fmt[0:2], "little") == _WAVE_PCM
    if plain_pcm and bits == 24 and block_align == 4 * channels:
        width = 4
    pcm = pcm[: len(pcm) // (width * channels) * width * channels]  # whole frames
    if tag == _WAVE_FLOAT:
        samples = np.frombuffer(pcm, "<f4" if width == 4 else "<f8").astype(np.float32)
    elif width == 1:
        samples = (np.frombuffer(pcm, np.uint8).astype(np.int32) - 128).astype(np.float32) * np.float32(1 / 128)
    elif width == 2:
        samples = np.frombuffer(pcm, "<i2").astype(np.float32) * np.float32(1 / 32768)
    elif width == 3:
        b = np.frombuffer(pcm, np.uint8).reshape(-1, 3).astype(np.int32)
        ints = (b[:, 0] << 8 | b[:, 1] << 16 | b[:, 2] << 24).view(np.int32)
        samples = ints.astype(np.float32) * np.float32(2.0**-31)
    else:
        samples = np.frombuffer(pcm, "<i4").astype(np.float32) * np.float32(2.0**-31)
    if channels > 1:
        frames_2d = samples.reshape(-1, channels)
        total = frames_2d[:, 0].copy()
        for c in range(1, channels):
            total += frames_2d[:, c]
        samples = total / np.float32(channels)
    return samples


def read_wav(path: PathLike, sample_rate: Optional[int] = None) -> np.ndarray:
    """A WAV file's samples as float32 mono, as decode_wav() reads its
    bytes; refuses, naming the path, what decode_wav() refuses."""
    if not isinstance(path, _PATH_TYPES):
        raise InvalidArgumentError(f"read_wav: the path is a {type(path).__name__}, not a str, bytes or os.PathLike")
    if isinstance(path, bytes) and path[:4] == b"RIFF":
        raise InvalidArgumentError("read_wav: these are a WAV file's bytes, not its path; decode_wav() reads them")
    name = os.fsdecode(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise IoError(f"{name}: cannot read it as audio: {e}") from None
    return decode_wav(data, sample_rate, name=name)


def transcribe(
    model: Model,
    audio: Union[PathLike, np.ndarray],
    *,
    words: Optional[Sequence[str]] = None,
    hotwords: Optional[Union[Sequence[Union[str, Tuple[str, float]]], Dict[str, float]]] = None,
    hotword_boost: float = DEFAULT_HOTWORD_BOOST,
    beam: Optional[int] = None,
    chunk_ms: int = 100,
    endpoint_ms: int = 500,
    max_utterance_ms: int = 30000,
    threads: int = 1,
    final_silence_ms: int = 300,
    warp: float = 0.0,
) -> Result:
    """Transcribes a WAV file (a path) or samples (int16 or float32 numpy at
    the model's rate) as `tarn transcribe` does, with its defaults: fed in
    chunks of chunk_ms, greedy decoding (beam 8 with words or hotwords,
    as Recognizer takes them), endpoints
    after 500 ms, 300 ms of silence stepped at the end, the model's own vocal
    tract warp (none unless it is a speaker's model; warp: a speaker's, e.g.
    from estimate_warp). The result's text is the
    utterances joined by spaces, its words every word with times, its
    duration the seconds of audio. Recognizer.transcribe() does the same on
    an existing recognizer."""
    _chunk_samples(chunk_ms, 1)  # refused before a recognizer is made
    recognizer = Recognizer(
        model,
        words=words,
        hotwords=hotwords,
        hotword_boost=hotword_boost,
        beam=beam,
        endpoint_ms=endpoint_ms,
        max_utterance_ms=max_utterance_ms,
        threads=threads,
        final_silence_ms=final_silence_ms,
        warp=warp,
    )
    return recognizer.transcribe(audio, chunk_ms=chunk_ms)


def round3(seconds: float) -> float:
    """Seconds rounded to milliseconds as `tarn transcribe --json` prints them
    (half away from zero)."""
    return math.copysign(math.floor(abs(seconds) * 1000.0 + 0.5), seconds) / 1000.0
