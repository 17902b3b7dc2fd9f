"""The tests' shared Python tooling (tests.goldens: golden data and the one
random-model builder), importable from the repository root. A regular
package, so that no other `tests` package on sys.path can shadow it."""
