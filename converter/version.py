"""The converter's version, recorded in every file it writes."""

CONVERTER_VERSION = "0.1.0"
