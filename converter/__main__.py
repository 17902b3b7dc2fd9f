"""The converter's command line: python3 -m converter {convert,inspect} ..."""

import argparse
import os
import signal
import sys

from .architectures import ARCHITECTURES
from .convert import convert_file, load_json
from .errors import ConversionError
from .fields import model_fields
from .reader import read_tarn
from .writer import DTYPES

# fast-transformers flags -> their --config key
FAST_TRANSFORMERS_FLAGS = {
    "n_heads": "n_heads",
    "attention_type": "attention_type",
    "feature_map": "feature_map",
    "activation": "activation",
}


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        status = args.run(args)
        sys.stdout.flush()  # a broken pipe is met here, not at exit
        return status
    except ConversionError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader stopped early (`inspect | head`), as a Unix tool's would:
        # no traceback, and none from Python's flush of stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE


def _parser() -> argparse.ArgumentParser:
    # Installed as tarn.converter (the package `tarn`), it runs as tarn-convert.
    prog = "python3 -m converter" if __package__ == "converter" else "tarn-convert"
    parser = argparse.ArgumentParser(prog=prog, description="tarn's model converter")
    commands = parser.add_subparsers(dest="command", required=True)

    convert = commands.add_parser("convert", help="convert a checkpoint to a .tarn file")
    convert.add_argument("checkpoint", help=".pt, .pth, .ckpt, .bin or .safetensors")
    convert.add_argument("out", help="the .tarn file to write")
    convert.add_argument(
        "--arch", choices=sorted(ARCHITECTURES), default="tarn", help="naming of the checkpoint (default tarn)"
    )
    convert.add_argument("--config", help="model config: a JSON file or JSON text")
    convert.add_argument("--dtype", choices=DTYPES, default="f32", help="f16 (bf16) stores matrices and embeddings in f16 (bfloat16); i8 stores the dense layers' weights in int8 (a scale per row) and embeddings in f16")
    convert.add_argument("--labels", help="output labels: one per line, or a .json list")
    convert.add_argument("--audio", help="speech front-end recipe: a JSON file or JSON text")
    convert.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE", help="extra provenance (repeatable)")
    convert.add_argument("--state-dict-key", metavar="KEY", help="the entry of a training checkpoint's dict that holds the state dict (where several do: a model's and its EMA's)")
    ft = convert.add_argument_group("fast-transformers (instead of, or over, --config)")
    ft.add_argument("--n-heads", type=int)
    ft.add_argument("--attention-type", choices=["causal-linear", "linear"])
    ft.add_argument("--feature-map", choices=["elu", "relu", "favor"])
    ft.add_argument("--activation", choices=["relu", "gelu"])
    convert.set_defaults(run=_convert)

    inspect = commands.add_parser("inspect", help="print a .tarn file's contents")
    inspect.add_argument("model", help="the .tarn file")
    inspect.set_defaults(run=_inspect)
    return parser


def _convert(args) -> int:
    config = load_json(args.config, "config")
    flags = {key: getattr(args, flag) for flag, key in FAST_TRANSFORMERS_FLAGS.items() if getattr(args, flag) is not None}
    if flags:
        if args.arch != "fast-transformers":
            raise ConversionError(f"--{next(iter(flags)).replace('_', '-')} is for --arch fast-transformers only")
        config = dict(config or {})
        spec = config.get("feature_map")
        if "feature_map" in flags and isinstance(spec, dict):
            # The config's favor parameters stay: the flag may only name them.
            if spec.get("name", flags["feature_map"]) != flags["feature_map"]:
                raise ConversionError(
                    f"--feature-map {flags['feature_map']} contradicts the config's feature_map {spec.get('name')!r}"
                )
            flags["feature_map"] = {**spec, "name": flags["feature_map"]}
        config.update(flags)
    metadata = {}
    for item in args.meta:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConversionError(f"--meta wants KEY=VALUE, got {item!r}")
        metadata[key] = value
    result = convert_file(
        args.checkpoint, args.out, args.arch, config, args.dtype, args.labels, args.audio, metadata, args.state_dict_key
    )
    c = result.config
    source = f", from the checkpoint's {result.state_dict_key!r} entry" if result.state_dict_key is not None else ""
    print(
        f"wrote {args.out}: {c.num_layers} layers, d_model {c.d_model}, {c.num_heads} heads, "
        f"{c.attention} {c.feature_map}, {args.dtype}, checksum {result.weight_checksum:016x}{source}"
    )
    return 0


def _inspect(args) -> int:
    f = read_tarn(args.model)
    print(f"{args.model}: {f.file_size} bytes, schema {f.schema_version[0]}.{f.schema_version[1]}")
    print("hyper-parameters:")
    for name, _ in model_fields():
        print(f"  {name:<20} {getattr(f.config, name)}")
    if f.labels is not None:
        shown = ", ".join(repr(label) for label in f.labels[:16])
        print(f"labels ({len(f.labels)}): {shown}{', ...' if len(f.labels) > 16 else ''}")
    if f.audio is not None:
        print("audio front end:")
        for key, value in f.audio.items():
            if isinstance(value, list):
                value = f"[{len(value)} values]"
            print(f"  {key:<20} {value}")
    total = sum(t.nbytes for t in f.tensors.values())
    print(f"tensors ({len(f.tensors)}, {total} bytes):")
    width = max((len(n) for n in f.tensors), default=0)
    for name, t in f.tensors.items():
        dtype = {"int8": "i8", "float16": "f16", "uint16": "bf16"}.get(t.dtype.name, "f32")
        shape = "x".join(map(str, t.shape))
        layout = "  blocked" if f.layouts[name] == "blocked" else ""
        print(f"  {name:<{width}}  {dtype}  {shape:<12} {t.nbytes:>10} bytes  @ {f.tensor_offsets[name]}{layout}")
    status = "ok" if f.checksum_ok else "BAD (the weights do not match: damaged file)"
    print(f"weight checksum: {f.weight_checksum:016x} {status}")
    if f.file_checksum is None:
        print("file checksum:   " + ("none (schema before 2.1)" if f.file_checksum_ok is None
                                     else "MISSING (every 2.1 file carries one: damaged file)"))
    else:
        status = "ok" if f.file_checksum_ok else "BAD (the file does not match: damaged file)"
        print(f"file checksum:   {f.file_checksum:016x} {status}")
    print("metadata:")
    for key, value in f.metadata.items():
        print(f"  {key}: {value}")
    return 0 if f.checksum_ok and f.file_checksum_ok is not False else 1


if __name__ == "__main__":
    sys.exit(main())
