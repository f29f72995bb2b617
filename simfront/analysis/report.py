"""Reports: one self-contained HTML page (figures embedded as base64 PNG) and a Markdown
file beside its PNGs, built from the same sections."""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simfront import __version__
from simfront.core.atomic import write_text


@dataclass
class Section:
    title: str
    blocks: list[tuple[str, Any]] = field(default_factory=list)   # (kind, payload)

    def text(self, s: str) -> "Section":
        self.blocks.append(("text", s))
        return self

    def table(self, df: pd.DataFrame, caption: str = "", floatfmt: str = "{:.3g}") -> "Section":
        self.blocks.append(("table", (df, caption, floatfmt)))
        return self

    def figure(self, png: Path, caption: str = "") -> "Section":
        self.blocks.append(("figure", (Path(png), caption)))
        return self


@dataclass
class Report:
    title: str
    out_dir: Path
    sections: list[Section] = field(default_factory=list)
    provenance: dict = field(default_factory=dict)

    @property
    def fig_dir(self) -> Path:
        return self.out_dir / "figures"

    def section(self, title: str) -> Section:
        s = Section(title)
        self.sections.append(s)
        return s

    def add_figure(self, section: Section, fig, name: str, caption: str = "") -> Path:
        from simfront.analysis.plots import save
        path = save(fig, self.fig_dir / f"{name}.png")
        section.figure(path, caption)
        return path

    def write(self, stem: str = "report") -> tuple[Path, Path]:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        html_path = self.out_dir / f"{stem}.html"
        md_path = self.out_dir / f"{stem}.md"
        write_text(html_path, self.to_html())
        write_text(md_path, self.to_markdown(md_path.parent))
        return html_path, md_path

    # ------------------------------------------------------------------ renderers

    def _stamp(self) -> str:
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        return f"simfront {__version__}, {now}"

    def to_markdown(self, base: Path) -> str:
        out = [f"# {self.title}", "", f"_{self._stamp()}_", ""]
        for s in self.sections:
            out += [f"## {s.title}", ""]
            for kind, p in s.blocks:
                if kind == "text":
                    out += [p, ""]
                elif kind == "table":
                    df, caption, fmt = p
                    if caption:
                        out += [f"**{caption}**", ""]
                    out += [_md_table(df, fmt), ""]
                else:
                    png, caption = p
                    rel = os.path.relpath(png, base)
                    out += [f"![{caption}]({rel})", "", f"_{caption}_" if caption else "", ""]
        if self.provenance:
            out += ["## Provenance", "", "```json", json.dumps(self.provenance, indent=1,
                                                               default=str), "```", ""]
        return "\n".join(out)

    def to_html(self) -> str:
        css = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;"
               "padding:0 1em;color:#222}table{border-collapse:collapse;font-size:13px;"
               "margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 7px;"
               "text-align:right}th{background:#f3f3f3}td:first-child,th:first-child"
               "{text-align:left}img{max-width:100%}figcaption{font-size:13px;color:#555}"
               "pre{background:#f6f6f6;padding:1em;overflow:auto;font-size:12px}")
        out = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
               f"<title>{html.escape(self.title)}</title><style>{css}</style></head><body>",
               f"<h1>{html.escape(self.title)}</h1><p><em>{html.escape(self._stamp())}</em></p>"]
        for s in self.sections:
            out.append(f"<h2>{html.escape(s.title)}</h2>")
            for kind, p in s.blocks:
                if kind == "text":
                    out.append(f"<p>{html.escape(p)}</p>")
                elif kind == "table":
                    df, caption, fmt = p
                    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
                    out.append(_html_table(df, fmt, cap))
                else:
                    png, caption = p
                    data = base64.b64encode(png.read_bytes()).decode()
                    out.append(f"<figure><img alt='{html.escape(caption)}' "
                               f"src='data:image/png;base64,{data}'>"
                               f"<figcaption>{html.escape(caption)}</figcaption></figure>")
        if self.provenance:
            out.append("<h2>Provenance</h2><pre>" + html.escape(
                json.dumps(self.provenance, indent=1, default=str)) + "</pre>")
        out.append("</body></html>")
        return "\n".join(out)


def _fmt(v: Any, fmt: str) -> str:
    if isinstance(v, (float, np.floating)):
        if np.isnan(v):
            return ""
        return fmt.format(v)
    if v is None:
        return ""
    return str(v)


def _rows(df: pd.DataFrame, fmt: str) -> tuple[list[str], list[list[str]]]:
    d = df.reset_index() if not isinstance(df.index, pd.RangeIndex) else df
    head = [str(c) for c in d.columns]
    rows = [[_fmt(v, fmt) for v in r] for r in d.itertuples(index=False)]
    return head, rows


def _md_table(df: pd.DataFrame, fmt: str) -> str:
    head, rows = _rows(df, fmt)
    esc = (lambda s: s.replace("|", "\\|").replace("\n", " "))
    lines = ["| " + " | ".join(map(esc, head)) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _html_table(df: pd.DataFrame, fmt: str, caption: str) -> str:
    head, rows = _rows(df, fmt)
    h = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f"<table>{caption}<thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"
