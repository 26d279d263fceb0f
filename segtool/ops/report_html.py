"""`report --out`: the figures of ``ops.report`` drawn as one self-contained HTML page.

plotly's JavaScript (the bundle the plotly package ships, as ``include_plotlyjs=True`` embeds it)
is embedded once, in the head: the page opens with no network.  Figures are plain plotly dicts
built here from the typed figures, each drawn by ``Plotly.newPlot`` (the plotly package itself
is not imported: that alone would cost longer than the rest of the page).  The figures themselves are embedded too, as JSON in
``<script type="application/json" id="segtool-figures">``, for tools and tests to read.
"""

from __future__ import annotations

import base64
import html
import importlib.util
import json
import os
import zlib
from pathlib import Path

from segtool.errors import SegtoolError
from segtool.formats.ranges import bounds, span
from segtool.formats.json_text import escape_line_ends
from segtool.ops.output_schema import KafkaReplicaSet, ReportFigures, ReportPartition, ReportStore, RocketMQReplicaSet
from segtool.ops.render import iso_time as iso

_COLOURS = {"create": "#1f77b4", "append": "#2ca02c", "late": "#ff7f0e", "future": "#d62728", "index": "#9467bd",
            "commit": "#2ca02c", "abort": "#d62728", "open": "#ff7f0e", "gap": "#7f7f7f", "damage": "#d62728",
            "segment": ("#4c78a8", "#9ecae9"), "error": "#d62728", "info": "#7f7f7f",
            "held": "#4c78a8", "held_uncommitted": "#9ecae9", "watermark": "#222222", "parting": "#9467bd",
            "lost_committed": "#d62728", "lost": "#ff7f0e", "refetched": "#7f7f7f", "alone": "#bcbd22"}
_PLOT_CONFIG = {"displaylogo": False, "responsive": True}
# times on every date axis in ISO-8601, UTC (plotly draws epoch milliseconds as UTC)
_ISO_TICKS = {"type": "date", "tickformat": "%Y-%m-%dT%H:%M:%S.%LZ", "hoverformat": "%Y-%m-%dT%H:%M:%S.%LZ"}
_BYTE_TICKS = {"exponentformat": "SI", "ticksuffix": "B"}
DAMAGE_MARKS = "damaged (marks)"  # the trace that keeps every damaged range visible, whatever its width


def _damage_marks(starts: list[int], hover: list[str], axis: str = "y2") -> dict:
    """A tick at the start of every damaged range: a torn tail or a few bytes on a long axis draw no
    line of their own."""
    return {"type": "scatter", "mode": "markers", "x": starts, "y": ["damaged"] * len(starts), "xaxis": "x",
            "yaxis": axis, "name": DAMAGE_MARKS, "text": hover, "hoverinfo": "text",
            "marker": {"symbol": "diamond-tall", "size": 14, "color": _COLOURS["damage"]},
            "showlegend": False}


def _lane_segments(spans, lane: str, name: str, colour: str, hover: list[str], width: int = 10) -> dict:
    """Horizontal bars on a lane of the lanes axis: one line piece per (first, last) span."""
    xs, ys, text = [], [], []
    for (first, last), words in zip(spans, hover):
        xs += [first, last, None]
        ys += [lane, lane, None]
        text += [words, words, None]
    return {"type": "scatter", "mode": "lines", "x": xs, "y": ys, "xaxis": "x", "yaxis": "y2", "name": name,
            "line": {"color": colour, "width": width}, "text": text, "hoverinfo": "text+name",
            "showlegend": False}


def _finding_traces(findings: dict, root: str | None = None, axis: str = "y2") -> tuple[list[dict], list[str]]:
    """One marker trace per finding kind, on its own lane: each finding at its place when all are
    listed, else a marker per bin of the offsets (bigger with more findings), so every finding of
    every kind is drawn."""
    listed = len(findings["shown"]) == findings["total"]
    by_kind: dict[str, list[dict]] = {}
    if listed:
        for finding in findings["shown"]:
            if finding["placed_at"] is not None:
                by_kind.setdefault(finding["kind"], []).append(finding)
    else:
        for entry in findings["bins"]:
            by_kind.setdefault(entry["kind"], []).append(entry)
    traces, lanes = [], []
    for kind, items in sorted(by_kind.items()):
        lane = f"finding: {kind}"
        lanes.append(lane)
        error = any(f["severity"] == "error" for f in items)
        marker = {"symbol": "x" if error else "circle-open", "size": 11, "color": _COLOURS["error" if error else "info"]}
        if listed:
            xs = [f["placed_at"] for f in items]
            text = [f"{f['severity']} {f['kind']} ({_file_name(f['file'], root)}): {f['message'][:300]}" for f in items]
        else:
            xs = [(f["first"] + f["last"]) // 2 for f in items]
            text = [f"{f['count']} {kind} at {f['first']}..{f['last']}" for f in items]
            marker["size"] = [min(24, 8 + 3 * f["count"].bit_length()) for f in items]
        traces.append({"type": "scatter", "mode": "markers", "x": xs, "y": [lane] * len(items), "xaxis": "x",
                       "yaxis": axis, "name": kind, "marker": marker, "text": text, "hoverinfo": "text",
                       "showlegend": False})
    return traces, lanes


def _file_name(path: str, root: str | None) -> str:
    """A file as a reader finds it: its name in a partition, its path under the store in a store
    (every CommitLog and ConsumeQueue file of a store is named by an offset)."""
    if root is None:
        return path.rsplit("/", 1)[-1]
    return os.path.relpath(path, root)


def _vertical(x: float, colour: str, dash: str, label: str | None = None) -> tuple[dict, dict | None]:
    shape = {"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0, "y1": 1,
             "line": {"color": colour, "width": 2 if label else 1, "dash": dash}}
    note = None if label is None else {"x": x, "xref": "x", "y": 1, "yref": "paper", "text": label,
                                       "showarrow": False, "xanchor": "left", "yanchor": "bottom",
                                       "font": {"color": colour}}
    return shape, note


def _partition_timeline(p: ReportPartition) -> dict:
    t = p["timeline"]
    # a point per bucket at its middle offset; no text per point: a big partition's page stays small
    middle = [(a + b) // 2 for a, b in zip(t["first_offset"], t["last_offset"])]
    where = "offset %{x}" if t["batches_per_bucket"] == 1 else f"offsets around %{{x}} (up to " \
        f"{t['batches_per_bucket']} batches)"
    traces = [
        {"type": "scatter", "mode": "lines+markers", "x": middle, "y": t["create_time_max"], "name": "create time",
         "marker": {"size": 4, "color": _COLOURS["create"]}, "line": {"width": 1}, "connectgaps": False,
         "hovertemplate": where + "<br>create time %{y}<extra></extra>"},
    ]
    if any(v is not None for v in t["log_append_time"]):
        traces.append({"type": "scatter", "mode": "lines+markers", "x": middle, "y": t["log_append_time"],
                       "name": "log-append time", "marker": {"size": 4, "color": _COLOURS["append"]},
                       "line": {"width": 1}, "connectgaps": False,
                       "hovertemplate": where + "<br>log-append time %{y}<extra></extra>"})
    for key, name, symbol, colour in (("out_of_order", "timestamp below an earlier batch's", "x", "late"),
                                       ("future", "timestamp in the future", "triangle-up", "future")):
        events = p[key]["shown"]
        if events:
            traces.append({"type": "scatter", "mode": "markers", "x": [e["offset"] for e in events],
                           "y": [e["timestamp"] for e in events], "name": f"{name} ({p[key]['count']})",
                           "marker": {"symbol": symbol, "size": 9, "color": _COLOURS[colour]},
                           "text": [f"offset {e['offset']}: {iso(e['timestamp'])}, reference {iso(e['reference'])}"
                                    for e in events], "hoverinfo": "text+name"})
    index = p["time_index"]
    if index["offsets"]:
        traces.append({"type": "scatter", "mode": "markers", "x": index["offsets"], "y": index["values"],
                       "name": f"time index entries ({index['entries']})",
                       "marker": {"symbol": "diamond-open", "size": 7, "color": _COLOURS["index"]}})
    lanes = ["segments"]
    segments = p["segments"]
    spans = [(s["first_offset"], s["last_offset"]) for s in segments if s["first_offset"] is not None]
    words = [f"{_segment_name(s)}: {s['batches']} batches, {s['records']} records, {s['size']} bytes"
             for s in segments if s["first_offset"] is not None]
    for parity in (0, 1):
        traces.append(_lane_segments(spans[parity::2], "segments", "segment", _COLOURS["segment"][parity],
                                     words[parity::2], 14))
    if p["offset_index"]["offsets"]:
        lanes.append("offset index")
        traces.append({"type": "scatter", "mode": "markers", "x": p["offset_index"]["offsets"],
                       "y": ["offset index"] * len(p["offset_index"]["offsets"]), "xaxis": "x", "yaxis": "y2",
                       "name": f"offset index entries ({p['offset_index']['entries']})",
                       "marker": {"symbol": "line-ns-open", "size": 10, "color": _COLOURS["index"]},
                       "text": [f"offset {o} at byte {v}" for o, v in zip(p["offset_index"]["offsets"],
                                                                          p["offset_index"]["values"])],
                       "hoverinfo": "text", "showlegend": False})
    if p["gaps"]["shown"]:
        lanes.append("compaction gaps")
        gaps = p["gaps"]["shown"]
        traces.append(_lane_segments([(g["first_offset"], g["last_offset"]) for g in gaps], "compaction gaps",
                                     "gap", _COLOURS["gap"],
                                     [f"offsets {g['first_offset']}..{g['last_offset']} absent" for g in gaps]))
    for outcome, lane in (("commit", "committed transactions"), ("abort", "aborted transactions"),
                          ("open", "open transactions")):
        spans = [s for s in p["transactions"]["shown"] if s["outcome"] == outcome]
        if spans:
            lanes.append(lane)
            traces.append(_lane_segments([(s["first_offset"], s["last_offset"]) for s in spans], lane, lane,
                                         _COLOURS[outcome],
                                         [f"producer {s['producer_id']}: offsets {s['first_offset']}..{s['last_offset']}"
                                          for s in spans]))
    damaged = [d for d in p["damaged"] if d["first_offset"] is not None]
    if damaged or p["damaged_bins"]:
        lanes.append("damaged")
        if p["damaged_bins"]:
            spans = [(d["first_offset"], d["last_offset"]) for d in p["damaged_bins"]]
            words = [f"{d['ranges']} damaged ranges ({d['bytes']} bytes) in offsets {d['first_offset']}.."
                     f"{d['last_offset']}" for d in p["damaged_bins"]]
        else:
            spans = [(d["first_offset"], d["last_offset"] if d["last_offset"] is not None else d["first_offset"])
                     for d in damaged]
            words = [f"{d['reason']}: bytes {d['first_byte']}..{d['last_byte']}, offsets {d['first_offset']}.."
                     f"{d['last_offset'] if d['last_offset'] is not None else '?'}" for d in damaged]
        traces.append(_lane_segments(spans, "damaged", "damaged", _COLOURS["damage"], words))
        traces.append(_damage_marks([first for first, _ in spans], words))
    finding_traces, finding_lanes = _finding_traces(p["findings"])
    traces += finding_traces
    lanes += finding_lanes
    shapes, notes = [], []
    if all(s["segments"] == 1 for s in segments):
        for s in segments[1:]:
            shape, _ = _vertical(s["base_offset"], "#999999", "dot")
            shapes.append(shape)
    if p["truncation"] is not None and p["truncation"]["offset"] is not None:
        shape, note = _vertical(p["truncation"]["offset"], _COLOURS["damage"], "dash",
                                f"recovery truncates at offset {p['truncation']['offset']}")
        shapes.append(shape)
        notes.append(note)
    lane_height = 22
    height = 420 + lane_height * len(lanes)
    split = min(0.6, (lane_height * len(lanes) + 40) / height)
    return {"data": traces, "layout": {
        "title": {"text": "Offsets against time, and what lies where along the offsets"},
        "height": height, "hovermode": "closest", "shapes": shapes, "annotations": notes,
        "xaxis": {"title": {"text": "offset"}, "anchor": "y2", "showspikes": True},
        "yaxis": {"domain": [split + 0.06, 1], **_ISO_TICKS, "title": {"text": "timestamp (UTC)"}},
        "yaxis2": {"domain": [0, split], "type": "category", "categoryorder": "array",
                   "categoryarray": list(reversed(lanes)), "automargin": True},
        "legend": {"orientation": "h", "y": -0.12},
        "margin": {"t": 60, "b": 40}}}


def _rates_figure(p: ReportPartition) -> dict | None:
    rates = p["rates"]
    if not rates["start"]:
        return None
    return {"data": [
        {"type": "bar", "x": rates["start"], "y": rates["records_per_second"], "name": "records/s",
         "marker": {"color": _COLOURS["create"]}, "offsetgroup": 1},
        {"type": "bar", "x": rates["start"], "y": rates["bytes_per_second"], "name": "bytes/s", "yaxis": "y2",
         "marker": {"color": _COLOURS["append"]}, "offsetgroup": 2},
    ], "layout": {
        "title": {"text": f"Records and bytes per second ({rates['bucket_ms'] / 1000:g} s buckets, by batch timestamp)"},
        "height": 320, "barmode": "group", "xaxis": {**_ISO_TICKS, "title": {"text": "time (UTC)"}},
        "yaxis": {"title": {"text": "records/s"}, "rangemode": "tozero"},
        "yaxis2": {"title": {"text": "bytes/s"}, "overlaying": "y", "side": "right", "rangemode": "tozero",
                   "exponentformat": "SI", "ticksuffix": "B/s"},
        "legend": {"orientation": "h", "y": -0.25}, "margin": {"t": 50}}}


def _size_label(size: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size // scale} {unit}"
    return f"{size} B"


def _batches_figure(p: ReportPartition) -> dict:
    edges, counts = p["batch_sizes"]["bin_edges"], p["batch_sizes"]["batches"]
    used = [i for i, c in enumerate(counts) if c]
    low, high = (used[0], used[-1]) if used else (0, 0)
    labels = [f"{_size_label(edges[i])}–{_size_label(edges[i + 1]) if i + 1 < len(edges) else '∞'}"
              for i in range(low, high + 1)]
    producers = p["producers"]
    return {"data": [
        {"type": "bar", "x": labels, "y": counts[low:high + 1], "name": "batches by size", "xaxis": "x",
         "yaxis": "y", "marker": {"color": _COLOURS["create"]}},
        {"type": "bar", "x": [c["codec"] for c in p["codecs"]], "y": [c["batches"] for c in p["codecs"]],
         "name": "batches by codec", "xaxis": "x2", "yaxis": "y2", "marker": {"color": _COLOURS["append"]},
         "hovertext": [f"{c['records']} records, {c['bytes']} bytes" for c in p["codecs"]]},
        {"type": "bar", "x": [str(f["producer_id"]) for f in producers], "y": [f["records"] for f in producers],
         "name": "records by producer id", "xaxis": "x3", "yaxis": "y3", "marker": {"color": _COLOURS["index"]},
         "hovertext": [f"epochs {f['producer_epochs']}, {f['batches']} batches, offsets {f['first_offset']}.."
                  f"{f['last_offset']}{', transactional' if f['transactional'] else ''}" for f in producers]},
    ], "layout": {
        "title": {"text": f"Batches: sizes, codecs and producers ({p['producer_count']} producer ids)"},
        "height": 340, "showlegend": False, "margin": {"t": 60},
        "xaxis": {"domain": [0, 0.42], "title": {"text": "batch size"}, "type": "category"},
        "yaxis": {"title": {"text": "batches"}},
        "xaxis2": {"domain": [0.5, 0.68], "title": {"text": "codec"}, "type": "category"},
        "yaxis2": {"anchor": "x2", "title": {"text": "batches"}},
        "xaxis3": {"domain": [0.76, 1], "title": {"text": "producer id"}, "type": "category"},
        "yaxis3": {"anchor": "x3", "title": {"text": "records"}}}}


def _store_timeline(s: ReportStore) -> dict | None:
    t = s["timeline"]
    if not t["series"]:
        return None
    names = [f"{q['topic']}/{q['queue_id']}" if q["queue_id"] is not None else q["topic"] for q in t["series"]]
    # empty cells left blank, the busiest darkest
    z = [[count or None for count in q["messages"]] for q in t["series"]]
    data = [{"type": "heatmap", "x": t["start"], "y": names, "z": z, "zmin": 0,
             "colorscale": [[0, "#deebf7"], [1, "#08306b"]], "colorbar": {"title": {"text": "messages"}},
             "hovertemplate": "%{y}<br>%{x}<br>%{z} messages<extra></extra>"}]
    dropped = t["dropped_by_recovery"]
    lost_row = f"dropped by recovery ({sum(dropped)})"
    if any(dropped):
        chosen = [i for i, n in enumerate(dropped) if n]
        data.append({"type": "scatter", "mode": "markers", "x": [t["start"][i] for i in chosen],
                     "y": [lost_row] * len(chosen), "name": "dropped by recovery",
                     "marker": {"symbol": "x", "size": 10, "color": _COLOURS["damage"]},
                     "text": [f"{dropped[i]} messages past the recovery cut" for i in chosen], "hoverinfo": "text+x",
                     "showlegend": False})
        names = names + [lost_row]
    shapes, notes = [], []
    if t["cut_timestamp"] is not None:
        shape, note = _vertical(t["cut_timestamp"], _COLOURS["damage"], "dash", "recovery cut (last message kept)")
        shapes.append(shape)
        notes.append(note)
    return {"data": data,
            "layout": {"title": {"text": f"Messages per topic and queue over time ({t['bucket_ms'] / 1000:g} s "
                                         "buckets, by store timestamp)"},
                       "height": 200 + 18 * len(names), "xaxis": {**_ISO_TICKS, "title": {"text": "time (UTC)"}},
                       "yaxis": {"automargin": True, "type": "category"},
                       "shapes": shapes, "annotations": notes, "margin": {"t": 50}}}


def _store_coverage(s: ReportStore) -> dict:
    traces, lanes = [], []
    files = s["commitlog"]
    if files:
        lanes.append("CommitLog data")
        traces.append(_lane_segments([(f["start_offset"], f["data_end_offset"]) for f in files], "CommitLog data",
                                     "CommitLog", _COLOURS["segment"][0],
                                     [f"{_file_name(f['file'], s['root'])}: {f['messages']} messages, data to physical "
                                      f"offset {f['data_end_offset']} ({f['status']})" for f in files], 14))
    indexed = [f for f in s["index_files"] if f["begin_phy_offset"] is not None]
    if indexed:
        lanes.append("IndexFile coverage")
        traces.append(_lane_segments([(f["begin_phy_offset"], f["end_phy_offset"]) for f in indexed],
                                     "IndexFile coverage", "IndexFile", _COLOURS["index"],
                                     [f"{_file_name(f['file'], s['root'])}: {f['index_count']} entries, "
                                      f"{iso(f['begin_timestamp'])} .. {iso(f['end_timestamp'])}" for f in indexed]))
    damaged = [d for d in s["damaged"] if d["physical_offset"] is not None]
    if damaged:
        lanes.append("damaged")
        words = [f"{d['reason']}: bytes {d['first_byte']}..{d['last_byte']} of {_file_name(d['file'], s['root'])}"
                 for d in damaged]
        traces.append(_lane_segments([(d["physical_offset"], d["physical_offset"] + d["last_byte"] - d["first_byte"])
                                      for d in damaged], "damaged", "damaged", _COLOURS["damage"], words))
        traces.append(_damage_marks([d["physical_offset"] for d in damaged], words))
    finding_traces, finding_lanes = _finding_traces(s["findings"], s["root"])
    traces += finding_traces
    lanes += finding_lanes
    shapes, notes = [], []
    if s["truncation"] is not None:
        shape, note = _vertical(s["truncation"]["offset"], _COLOURS["damage"], "dash",
                                f"recovery cuts at physical offset {s['truncation']['offset']}")
        shapes.append(shape)
        notes.append(note)
    return {"data": traces, "layout": {
        "title": {"text": "CommitLog and IndexFile coverage, damage and findings along the physical offsets"},
        "height": 160 + 26 * max(len(lanes), 1), "shapes": shapes, "annotations": notes, "hovermode": "closest",
        "xaxis": {"title": {"text": "CommitLog physical offset (bytes)"}, "anchor": "y2", **_BYTE_TICKS},
        "yaxis2": {"domain": [0, 1], "type": "category", "categoryorder": "array",
                   "categoryarray": list(reversed(lanes)), "automargin": True},
        "margin": {"t": 60}}}


# -- replica sets: one partition or store held by several brokers ---------------------------------

BEST = "★ best"  # marks the best candidate's lanes and row (Kafka)
REFERENCE = "★ reference"  # marks the store or node a RocketMQ set is compared with (its reason beside it)


class _Lanes:
    """A figure of lanes along one axis (offsets, physical offsets or entry indexes): spans, marks and
    vertical lines, each kind of span named once in the legend."""

    def __init__(self):
        self.lanes: list[str] = []
        self.traces: list[dict] = []
        self.shapes: list[dict] = []
        self.notes: list[dict] = []
        self.named: set[str] = set()

    def lane(self, lane: str) -> str:
        if lane not in self.lanes:
            self.lanes.append(lane)
        return lane

    def spans(self, lane: str, spans: list[tuple[int, int]], name: str, colour: str, hover: list[str]) -> None:
        """Inclusive (first, last) offsets, indexes or bytes, each drawn as one unit wide (so one offset shows,
        and a span ends where the next begins), with a tick at its start that a few records on a long axis
        keep visible."""
        if not spans:
            return
        trace = _lane_segments([(first, last + 1) for first, last in spans], self.lane(lane), name, colour, hover, 12)
        trace.update(yaxis="y", legendgroup=name, showlegend=name not in self.named)
        self.named.add(name)
        self.traces.append(trace)
        self.traces.append({"type": "scatter", "mode": "markers", "x": [first for first, _ in spans],
                            "y": [lane] * len(spans), "name": name, "legendgroup": name, "showlegend": False,
                            "text": hover, "hoverinfo": "text",
                            "marker": {"symbol": "line-ns-open", "size": 14, "color": colour,
                                       "line": {"width": 3, "color": colour}}})

    def mark(self, lane: str, x: int, name: str, hover: str, symbol: str = "line-ns-open",
             colour: str = _COLOURS["watermark"]) -> None:
        self.traces.append({"type": "scatter", "mode": "markers", "x": [x], "y": [self.lane(lane)], "name": name,
                            "legendgroup": name, "showlegend": name not in self.named, "text": [hover],
                            "hoverinfo": "text", "marker": {"symbol": symbol, "size": 16, "color": colour,
                                                            "line": {"width": 2, "color": colour}}})
        self.named.add(name)

    def vertical(self, x: int, label: str) -> None:
        shape, note = _vertical(x, _COLOURS["parting"], "dash", label)
        self.shapes.append(shape)
        self.notes.append(note)

    def figure(self, title: str, axis: dict) -> dict:
        height = 230 + 26 * max(len(self.lanes), 1)
        return {"data": self.traces, "layout": {
            "title": {"text": title}, "height": height, "hovermode": "closest", "shapes": self.shapes,
            "annotations": self.notes, "xaxis": axis,
            "yaxis": {"type": "category", "categoryorder": "array", "categoryarray": list(reversed(self.lanes)),
                      "automargin": True},
            # the legend below the axis title, whatever the number of lanes
            "legend": {"orientation": "h", "y": -70 / (height - 190), "yanchor": "top"},
            "margin": {"t": 70, "b": 120}}}


def _parting_lines(figure: _Lanes, partings: list[tuple[int, str]]) -> None:
    """One line per offset where copies part, naming every pair that parts there."""
    at: dict[int, list[str]] = {}
    for offset, pair in partings:
        at.setdefault(offset, []).append(pair)
    for offset, pairs in sorted(at.items()):
        figure.vertical(offset, f"{', '.join(pairs)} part at {offset}")


def _held(figure: _Lanes, lane: str, first: int, end: int, committed_to: int | None, what: str,
          committed_word: str) -> None:
    """What a copy holds from ``first`` to before ``end``: below ``committed_to`` (its high watermark, confirm
    offset or committed index; None: not known) dark, the rest light."""
    if end <= first:
        figure.lane(lane)
        return
    cut = end if committed_to is None else max(first, min(committed_to, end))
    if cut > first:
        figure.spans(lane, [(first, cut - 1)], "held" if committed_to is None else f"held, below the {committed_word}",
                     _COLOURS["held"], [f"{lane}: {what} {first}..{cut - 1}"])
    if end > cut:
        figure.spans(lane, [(cut, end - 1)], f"held, at or past the {committed_word}", _COLOURS["held_uncommitted"],
                     [f"{lane}: {what} {cut}..{end - 1}, at or past the {committed_word} {committed_to}"])


def _run_words(follower: dict, run: dict) -> str:
    fate = "held by the new leader: fetched again" if run["on_new_leader"] else "lost"
    sequences = "" if run["producer_id"] < 0 else (
        f", producer {run['producer_id']} epoch {run['producer_epoch']} sequences {run['first_sequence']}.."
        f"{run['last_sequence']}")
    return (f"{follower['broker']} truncates to {follower['truncate_to']}: offsets {run['first_offset']}.."
            f"{run['last_offset']}, {run['records']} records ({run['committed_records']} committed, {fate}); "
            f"leader epoch {run['leader_epoch']}{sequences}; {iso(run['first_timestamp'])} .. "
            f"{iso(run['max_timestamp'])}")


def _candidate_lane(candidate: dict, best: str | None) -> str:
    mark = f" {BEST}" if candidate["broker"] == best else ""
    electable = " (a vote cannot elect it)" if candidate["electable"] is False else ""
    return f"elect {candidate['broker']}{mark}{electable}"


def _kafka_replicas_figure(s: KafkaReplicaSet) -> dict:
    figure = _Lanes()
    for r in s["replicas"]:
        lane = f"{r['broker']} holds"
        _held(figure, lane, r["log_start_offset"], r["log_end_offset"], r["high_watermark"], "offsets",
              "high watermark")
        if r["high_watermark"] is not None:
            figure.mark(lane, r["high_watermark"], "high watermark", f"{r['broker']}: high watermark "
                        f"{r['high_watermark']} (log {r['log_start_offset']}..{r['log_end_offset']})")
        cut = r["damage"]["recovery_cut"]
        if cut is not None:
            figure.mark(lane, cut["offset"], "recovery cut", f"{r['broker']}: the broker's load cuts at offset "
                        f"{cut['offset']} ({cut['segment'].rsplit('/', 1)[-1]} byte {cut['byte']})",
                        "diamond-tall", _COLOURS["damage"])
    for candidate in s["candidates"]:
        lane = _candidate_lane(candidate, s["best_candidate"])
        figure.mark(lane, candidate["new_epoch_start_offset"], "new epoch starts",
                    f"{lane}: epoch {s['new_leader_epoch']} starts at {candidate['new_epoch_start_offset']}; the "
                    f"partition loses {candidate['records_lost']} records ({candidate['committed_records_lost']} "
                    "committed)", "triangle-right", _COLOURS["held"])
        for follower in candidate["followers"]:
            spans: dict[str, list[tuple[tuple[int, int], str]]] = {"committed": [], "never": [], "refetched": []}
            for run in follower["dropped"]:
                words = _run_words(follower, run)
                first, last = run["first_offset"], run["last_offset"]
                if run["on_new_leader"]:
                    spans["refetched"].append(((first, last), words))
                elif not run["committed_records"]:
                    spans["never"].append(((first, last), words))
                elif run["committed_records"] < run["records"] == last - first + 1:
                    # dense offsets: the committed records are the run's first ones (below a high watermark)
                    split = first + run["committed_records"]
                    spans["committed"].append(((first, split - 1), words))
                    spans["never"].append(((split, last), words))
                else:
                    spans["committed"].append(((first, last), words))
            drops = f"{lane}: {follower['broker']} drops"
            for kind, name, colour in (("committed", "dropped, committed", _COLOURS["lost_committed"]),
                                       ("never", "dropped, never committed", _COLOURS["lost"]),
                                       ("refetched", "dropped, fetched again from the new leader",
                                        _COLOURS["refetched"])):
                figure.spans(drops, [span for span, _ in spans[kind]], name, colour, [w for _, w in spans[kind]])
    _parting_lines(figure, [(p["agreed_until"], f"{p['a']} | {p['b']}") for p in s["pairs"] if p["diverged"]])
    return figure.figure(f"{s['topic']}-{s['partition']}: each broker's copy along the offsets, where the copies "
                         "part, and what each election drops", {"title": {"text": "offset"}, "showspikes": True})


def _kafka_replicas_section(page: "_Page", s: KafkaReplicaSet, number: int) -> None:
    name = f"{s['topic']}-{s['partition']}"
    page.add(f"<section class=replicas id=replica-set-{number}><h2>Replicas: Kafka partition {html.escape(name)} on "
             f"{len(s['replicas']) + len(s['unreadable'])} brokers</h2>")
    best = next((c for c in s["candidates"] if c["broker"] == s["best_candidate"]), None)
    parted = sorted({p["agreed_until"] for p in s["pairs"] if p["diverged"]})
    words = [f"topic id {s['topic_id']}" if s["topic_id"] else "no topic id (no partition.metadata)",
             f"the copies part at offset {', '.join(map(str, parted))}" if parted else
             "the copies do not part (each is a prefix of another)"]
    if best is not None:
        words.append(f"best candidate {best['broker']}: its election loses {best['records_lost']} records, "
                     f"{best['committed_records_lost']} of them committed")
    page.add(f"<p>{html.escape('; '.join(words))}.</p>")
    page.add(_table(["broker", "directory", "log start", "log end", "high watermark", "leader epoch cache",
                     "epochs agree", "batches", "records", "damage", "gaps"],
                    [[r["broker"], r["directory"], r["log_start_offset"], r["log_end_offset"],
                      "unknown" if r["high_watermark"] is None else r["high_watermark"],
                      " ".join(f"{e['epoch']}@{e['start_offset']}" for e in r["leader_epoch_cache"]) or "-",
                      "yes" if r["epochs_agree"] else "no", r["batches"], r["records"], _replica_damage(r),
                      "; ".join(r["gaps"]) or "-"] for r in s["replicas"]]))
    if s["unreadable"]:
        page.add(_table(["broker", "directory", "unreadable"],
                        [[u["broker"], u["directory"], u["problem"]] for u in s["unreadable"]]))
    if s["candidates"]:
        page.figure(_kafka_replicas_figure(s))
        page.add("<h3>Each replica as leader</h3>" + _table(
            ["candidate", "epoch starts at", "what each follower truncates", "records lost", "committed lost",
             "never committed lost", "sequence gaps", "hanging transactions"],
            [[c["broker"] + (f" {BEST}" if c["broker"] == s["best_candidate"] else "")
              + (" (a vote cannot elect it)" if c["electable"] is False else ""),
              c["new_epoch_start_offset"],
              "; ".join(f"{f['broker']} to {f['truncate_to']}: drops {f['dropped_records']} "
                        f"({f['dropped_committed_records']} committed, {f['refetched_records']} fetched again)"
                        for f in c["followers"]),
              c["records_lost"], c["committed_records_lost"], c["uncommitted_records_lost"],
              len(c["sequence_gaps"]), len(c["hanging_transactions"])] for c in s["candidates"]], "elections"))
        page.add("<details><summary>Pairs</summary>" + _table(
            ["a", "b", "compared from", "agree until", "diverged", "a past it", "b past it"],
            [[p["a"], p["b"], p["first_common_offset"], p["agreed_until"], "yes" if p["diverged"] else "no",
              _past_words(p["a_past"]), _past_words(p["b_past"])] for p in s["pairs"]]) + "</details>")
    page.add(_notes_html(s["notes"] + [f"{r['broker']}: {n}" for r in s["replicas"] for n in r["notes"]]))
    page.add("</section>")


def _replica_damage(r: dict) -> str:
    damage = r["damage"]
    words = []
    if damage["recovery_cut"] is not None:
        words.append(f"load cuts at offset {damage['recovery_cut']['offset']}")
    if damage["checksum_mismatches"]:
        words.append(f"{damage['checksum_mismatches']} CRC mismatches")
    return "; ".join(words) or "-"


def _past_words(past: dict) -> str:
    if not past["batches"]:
        return "nothing"
    return f"{past['records']} records in {past['batches']} batches ({past['first_offset']}..{past['last_offset']})"


def _dropped(figure: _Lanes, lane: str, first: int, last: int, committed_to: int | None, committed: str,
             words: str) -> None:
    """What a rejoining RocketMQ follower drops, from ``first`` to ``last``: below ``committed_to`` (its confirm
    offset or committed index + 1; None: unknown, nothing counted committed) red, the rest orange."""
    cut = first if committed_to is None else max(first, min(committed_to, last + 1))
    if cut > first:
        figure.spans(lane, [(first, cut - 1)], f"dropped, {committed}: lost", _COLOURS["lost_committed"], [words])
    if last >= cut:
        figure.spans(lane, [(cut, last)], f"dropped, never {committed}: lost", _COLOURS["lost"], [words])


def _rocketmq_replicas_figure(s: RocketMQReplicaSet) -> dict:
    figure = _Lanes()
    if s["layout"] == "dledger":
        committed_index = {node["broker"]: node["committed_index"] for node in s["nodes"]}
        for node in s["nodes"]:
            lane = f"{node['broker']} holds" + (f" {REFERENCE}" if node["broker"] == s["reference"] else "")
            committed = None if node["committed_index"] is None else node["committed_index"] + 1
            _held(figure, lane, node["begin_index"], node["end_index"] + 1, committed, "entries", "committed index")
            if node["committed_index"] is not None:
                # at the end of the committed entry's unit, where the held span turns light
                figure.mark(lane, node["committed_index"] + 1, "committed index",
                            f"{node['broker']}: committed index {node['committed_index']}")
        for rejoin in s["dledger_rejoins"]:
            if rejoin["dropped"] is None:
                continue
            leader = rejoin["leader"] + (f" {REFERENCE}" if rejoin["leader"] == s["reference"] else "") + (
                "" if rejoin["leader_electable"] else " (a vote cannot elect it)")
            lost = rejoin["committed_dropped"]
            run = rejoin["dropped"]
            committed = committed_index[rejoin["follower"]]
            words = (f"{rejoin['follower']} is cut back to index {rejoin['truncate_index']} ({rejoin['rule']}): "
                     f"entries {run['first_index']}..{run['last_index']}, {run['entries']} entries, {lost} committed")
            # the committed ones are those at or below the follower's committed index
            _dropped(figure, f"elect {leader}: {rejoin['follower']} drops", run["first_index"], run["last_index"],
                     None if committed is None else committed + 1, "committed", words)
        for missing in s["committed_missing"]:
            run = missing["missing"]
            figure.spans(f"{missing['lacker']} lacks what {missing['holder']} committed",
                         [(run["first_index"], run["last_index"])], "committed elsewhere, missing here",
                         _COLOURS["lost_committed"], [f"{run['entries']} entries {missing['holder']} committed (to "
                                                      f"index {missing['committed_index']})"])
        _parting_lines(figure, [(c["diverged_at_index"], f"{c['reference']} | {c['other']}")
                                for c in s["dledger_comparisons"] if c["diverged_at_index"] is not None])
        return figure.figure("DLedger nodes along the entry indexes: where they part, what each leader's "
                             "followers drop", {"title": {"text": "entry index"}})
    confirm_offset = {store["broker"]: store["confirm_offset"] for store in s["stores"]}
    for store in s["stores"]:
        lane = f"{store['broker']} holds" + (f" {REFERENCE}" if store["broker"] == s["reference"] else "")
        _held(figure, lane, store["min_offset"], store["max_offset"], store["confirm_offset"], "physical offsets",
              "confirm offset")
        if store["confirm_offset"] is not None:
            figure.mark(lane, store["confirm_offset"], "confirm offset",
                        f"{store['broker']}: confirm offset {store['confirm_offset']}")
    for comparison in s["comparisons"]:
        for side, holder in (("only_reference", comparison["reference"]), ("only_other", comparison["other"])):
            run = comparison[side]
            if run is not None:
                figure.spans(f"only {holder} (against {comparison['other'] if side == 'only_reference' else comparison['reference']})",
                             [(run["first_offset"], run["end_offset"] - 1)], "held by one copy only", _COLOURS["alone"],
                             [f"{run['messages']} messages, {run['bytes']} bytes only {holder} holds"])
    for rejoin in s["rejoins"]:
        run = rejoin["dropped"]
        if run is None:
            continue
        leader = rejoin["leader"] + (f" {REFERENCE}" if rejoin["leader"] == s["reference"] else "")
        words = (f"{rejoin['follower']} truncates to {rejoin['truncate_to']} ({rejoin['rule']}): {run['messages']} "
                 f"messages, {run['bytes']} bytes, {rejoin['confirmed_dropped']} confirmed")
        # the confirmed ones lie below the follower's confirm offset
        _dropped(figure, f"elect {leader}: {rejoin['follower']} drops", run["first_offset"], run["end_offset"] - 1,
                 confirm_offset[rejoin["follower"]], "confirmed", words)
    _parting_lines(figure, [(c["diverged_at"], f"{c['reference']} | {c['other']}")
                            for c in s["comparisons"] if c["diverged_at"] is not None])
    return figure.figure("CommitLog copies along the physical offsets: where they part, what each holds alone and "
                         "what each rejoin drops", {"title": {"text": "CommitLog physical offset (bytes)"},
                                                    **_BYTE_TICKS})


def _rocketmq_replicas_section(page: "_Page", s: RocketMQReplicaSet, number: int) -> None:
    dledger = s["layout"] == "dledger"
    members = s["nodes"] if dledger else s["stores"]
    page.add(f"<section class=replicas id=rocketmq-replica-set-{number}><h2>Replicas: RocketMQ "
             f"{'DLedger group' if dledger else 'master/slave copies'} ({s['replication']}), {len(members)} "
             f"{'nodes' if dledger else 'stores'}</h2>")
    state = [word for flag, word in ((s["diverged"], "copies part"), (s["damaged"], "a copy is damaged"),
                                     (s["loses_messages"], "an election or a lost disk loses committed data"))
             if flag]
    page.add(f"<p>{html.escape(REFERENCE)}: {html.escape(s['reference'])} ({html.escape(s['reference_reason'])}); "
             f"{html.escape(', '.join(state) or 'the copies agree on what they share')}.</p>")
    if dledger:
        page.add(_table(["node", "store", "entries", "begin index", "end index", "end term", "committed index",
                         "electable", "recovery cut"],
                        [[n["broker"], n["store"], n["entries"], n["begin_index"], n["end_index"], n["end_term"],
                          "-" if n["committed_index"] is None else n["committed_index"],
                          "yes" if n["electable"] else "no",
                          "-" if n["recovery_cut"] is None else f"pos {n['recovery_cut']['pos']} "
                          f"({n['entries_beyond_recovery']} entries beyond)"] for n in s["nodes"]]))
    else:
        page.add(_table(["store", "path", "min offset", "max offset", "confirm offset", "epochs", "beyond recovery"],
                        [[c["broker"], c["store"], c["min_offset"], c["max_offset"],
                          "-" if c["confirm_offset"] is None else c["confirm_offset"],
                          "-" if c["epochs"] is None else " ".join(f"{e['epoch']}@{e['start_offset']}"
                                                                   for e in c["epochs"]),
                          "-" if c["beyond_recovery"] is None else f"{c['beyond_recovery']['messages']} messages"]
                         for c in s["stores"]]))
    page.figure(_rocketmq_replicas_figure(s))
    if dledger:
        rows = [[r["leader"] + (f" {REFERENCE}" if r["leader"] == s["reference"] else ""),
                 "yes" if r["leader_electable"] else "no", r["follower"], r["rule"],
                 "-" if r["truncate_index"] is None else r["truncate_index"],
                 0 if r["dropped"] is None else r["dropped"]["entries"], r["committed_dropped"]]
                for r in s["dledger_rejoins"]]
        page.add("<h3>Each node as leader</h3>" + _table(
            ["leader", "electable", "follower", "rule", "cut back to index", "entries dropped", "committed dropped"],
            rows, "elections"))
    elif s["rejoins"]:
        rows = [[r["leader"] + (f" {REFERENCE}" if r["leader"] == s["reference"] else ""), r["follower"], r["rule"],
                 "-" if r["truncate_to"] is None else r["truncate_to"],
                 0 if r["dropped"] is None else r["dropped"]["messages"], r["confirmed_dropped"]]
                for r in s["rejoins"]]
        page.add("<h3>Each store as master</h3>" + _table(
            ["master", "follower", "rule", "truncates to", "messages dropped", "confirmed dropped"], rows, "elections"))
    if not dledger:
        page.add(_table(["reference", "other", "agree to", "parts at", "other lags (bytes, messages)",
                         "only the reference holds", "only the other holds"],
                        [[c["reference"], c["other"], "-" if c["agree_to"] is None else c["agree_to"],
                          "-" if c["diverged_at"] is None else c["diverged_at"],
                          "-" if c["lag_bytes"] is None else f"{c['lag_bytes']}, {c['lag_messages']}",
                          _run_messages(c["only_reference"]), _run_messages(c["only_other"])]
                         for c in s["comparisons"]]))
    page.add(_notes_html(s["notes"] + [f"{m['broker']}: {n}" for m in members for n in m["notes"]]))
    page.add("</section>")


def _run_messages(run: dict | None) -> str:
    return "nothing" if run is None else f"{run['messages']} messages ({run['first_offset']}..{run['end_offset']})"


# -- the page ---------------------------------------------------------------------------------


def _table(head: list[str], rows: list[list], css: str = "") -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>'


def _findings_html(findings: dict, root: str | None = None) -> str:
    if not findings["total"]:
        return "<p>verify found nothing here.</p>"
    counts = ", ".join(f"{kind} {n}" for kind, n in sorted(findings["by_kind"].items()))
    rows = [[f["severity"], f["kind"], _file_name(f["file"], root), "-" if f["byte_offset"] is None else f["byte_offset"],
             "-" if f["offset"] is None else f["offset"],
             "-" if f["placed_at"] is None else f"{f['placed_at']} ({f['placed_by']})", f["message"]]
            for f in findings["shown"]]
    more = "" if findings["total"] == len(findings["shown"]) else \
        f"<p class=note>{findings['total'] - len(findings['shown'])} more findings are counted above and drawn in " \
        "the plot's bins, not listed (segtool verify --json lists every one).</p>"
    return (f"<p>{findings['total']} findings: {html.escape(counts)}</p>"
            + _table(["severity", "kind", "file", "byte", "offset", "drawn at", "message"], rows, "findings") + more)


def _notes_html(notes: list[str]) -> str:
    if not notes:
        return ""
    return "<ul class=notes>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>"


def _rate(count: int, first: int | None, last: int | None) -> str:
    if first is None or last is None or last <= first:
        return "-"
    return f"{count / ((last - first) / 1000):.1f}/s"


def _plotly_js() -> str:
    """plotly's own JavaScript bundle, read from the installed plotly package without importing it
    (importing plotly costs longer than the rest of the page)."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise SegtoolError("the plotly package is not installed: it provides the page's JavaScript")
    return (Path(spec.submodule_search_locations[0]) / "package_data" / "plotly.min.js").read_text(encoding="utf-8")


def _plotly_loader() -> str:
    """plotly's bundle deflated and in base64 (4.8 MB becomes 1.9 MB: the page's 5 MB leave room for the
    figures), inflated by the browser's own DecompressionStream; each figure is drawn once it has run."""
    packed = base64.b64encode(zlib.compress(_plotly_js().encode(), 6)).decode()
    return ("<script>window.segtoolDraw=(function(){var queue=[];"
            f'var bytes=Uint8Array.from(atob("{packed}"),function(c){{return c.charCodeAt(0);}});'
            "new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream('deflate'))).text()"
            ".then(function(code){(0,eval)(code);queue.forEach(function(f){f();});queue=null;});"
            "return function(f){if(queue){queue.push(f);}else{f();}};})();</script>")


def _script_json(value) -> str:
    return escape_line_ends(json.dumps(value, separators=(",", ":"), ensure_ascii=False)).replace("</", "<\\/")


class _Page:
    """The page's parts; each figure a div drawn by ``Plotly.newPlot`` once the bundle has loaded."""

    def __init__(self):
        self.parts: list[str] = []
        self.figures = 0

    def figure(self, figure: dict | None) -> None:
        if figure is None:
            return
        self.figures += 1
        div = f"segtool-figure-{self.figures}"
        height = figure["layout"].get("height", 400)
        self.parts.append(f'<div id="{div}" class="plotly-graph-div" style="height:{height}px;width:100%"></div>'
                          f'<script>segtoolDraw(function(){{Plotly.newPlot("{div}",{_script_json(figure["data"])},'
                          f'{_script_json(figure["layout"])},{_script_json(_PLOT_CONFIG)});}});</script>')

    def add(self, text: str) -> None:
        self.parts.append(text)


def _segment_name(s: dict) -> str:
    first = s["file"].rsplit("/", 1)[-1]
    return first if s["segments"] == 1 else f"{first} .. {s['last_file'].rsplit('/', 1)[-1]} ({s['segments']} segments)"


def _startup_html(p: ReportPartition) -> str:
    """What start-up drops and what salvage gets back of it, in the plan's words."""
    startup = p["startup"]
    if startup is None:
        return ""
    shutdown = "after a clean shutdown" if startup["clean_shutdown"] else \
        f"after an unclean shutdown (recovery from the segment holding offset {startup['recovery_point']})"
    if startup["truncated_file"] is None:
        return (f"<p><b>At start-up</b> ({html.escape(shutdown)}) Kafka keeps every offset: the log ends at "
                f"{startup['log_end_offset']}.</p>")
    deleted = "" if not startup["segments_deleted"] else (
        f" and deletes the {startup['segments_deleted']} later segment(s) "
        f"{startup['first_deleted'].rsplit('/', 1)[-1]}..{startup['last_deleted'].rsplit('/', 1)[-1]}")
    torn = f", {startup['torn_batch_records']} of them in a torn batch" if startup["torn_batch_records"] else ""
    lost = [f"{bounds(r['first_offset'], r['last_offset'])} ({r['reason']})"
            for r in startup["lost_ranges"]]
    lost_records = startup["dropped_records"] - startup["salvageable_records"]
    return (f"<p class=startup><b>At start-up</b> ({html.escape(shutdown)}) Kafka truncates "
            f"{html.escape(startup['truncated_file'].rsplit('/', 1)[-1])} at byte {startup['truncated_at_byte']}"
            f"{html.escape(deleted)}: <b>recovery drops "
            f"{span(startup['dropped_first_offset'], startup['dropped_last_offset']) if startup['dropped_records'] else 'no record'}"
            f" ({startup['dropped_records']} records{torn}, "
            f"{startup['dropped_bytes']} bytes)</b>; the log ends at {startup['log_end_offset']}. "
            f"<b>salvage gets back {startup['salvageable_records']} of these records</b> (the dropped batches whose "
            f"CRC holds); {lost_records} are in damaged bytes nothing reads"
            + (f" (offsets {html.escape(', '.join(lost))})" if lost else "") + ".</p>")


def _partition_section(page: _Page, p: ReportPartition) -> None:
    name = p["directory"]
    truncation = p["truncation"]
    page.add(f"<section class=partition><h2>Kafka partition {html.escape(name)}{html.escape(_copy_of(p))}</h2>")
    page.add(_table(["segments", "batches", "records", "bytes", "offsets", "first timestamp", "last timestamp",
                     "records/s", "bytes/s", "log-append-time batches", "transactions (commit/abort/open)",
                     "recovery"],
                    [[len(p["segments"]), p["batches"], p["records"], p["bytes"],
                      f"{p['first_offset']}..{p['last_offset']}", iso(p["first_timestamp"]), iso(p["last_timestamp"]),
                      _rate(p["records"], p["first_timestamp"], p["last_timestamp"]),
                      _rate(p["bytes"], p["first_timestamp"], p["last_timestamp"]), p["log_append_time_batches"],
                      f"{p['transactions']['committed']}/{p['transactions']['aborted']}/{p['transactions']['open']}",
                      "keeps everything" if truncation is None else
                      f"truncates {truncation['file'].rsplit('/', 1)[-1]} at byte {truncation['byte_offset']} "
                      f"(offset {truncation['offset']}, {truncation['reason']})"]], "summary"))
    page.add(_startup_html(p))
    page.add(_notes_html(p["notes"]))
    page.figure(_partition_timeline(p))
    page.figure(_rates_figure(p))
    page.figure(_batches_figure(p))
    page.add("<h3>Findings</h3>" + _findings_html(p["findings"]))
    page.add("<details><summary>Segments</summary>" + _table(
        ["file", "base offset", "bytes", "status", "batches", "records", "offsets", "first timestamp",
         "last timestamp", "at start-up"],
        [[_segment_name(s), s["base_offset"], s["size"], s["status"], s["batches"], s["records"],
          f"{s['first_offset']}..{s['last_offset']}", iso(s["first_timestamp"]), iso(s["last_timestamp"]),
          _at_startup(s, p["startup"])] for s in p["segments"]]) + "</details>")
    page.add("</section>")


def _at_startup(s: dict, startup: dict | None) -> str:
    if "at_startup" not in s:
        return "-"
    if s["at_startup"] == "truncated" and startup is not None:
        return f"truncated at byte {startup['truncated_at_byte']}"
    return {"deleted": "deleted by recovery"}.get(s["at_startup"], s["at_startup"])


def _store_recovery_text(s: ReportStore) -> str:
    truncation = s["truncation"]
    if not s["commitlog"]:
        return "no CommitLog here: nothing for recovery to keep or cut"
    if truncation is None:
        return "keeps every message"
    return (f"cuts at physical offset {truncation['offset']} ({truncation['reason']}): "
            f"{truncation['messages_lost']} messages dropped ({truncation['messages_salvageable']} salvageable, "
            f"{truncation['messages_gone']} gone)")


def _store_section(page: _Page, s: ReportStore) -> None:
    page.add(f"<section class=store><h2>RocketMQ store {html.escape(s['root'])}{html.escape(_copy_of(s))}</h2>")
    page.add(_table(["messages", "bytes", "queues", "CommitLog files", "IndexFiles", "first store time",
                     "last store time", "messages/s", "recovery"],
                    [[s["messages"], s["bytes"], len(s["queues"]), len(s["commitlog"]), len(s["index_files"]),
                      iso(s["first_timestamp"]), iso(s["last_timestamp"]),
                      _rate(s["messages"], s["first_timestamp"], s["last_timestamp"]),
                      _store_recovery_text(s)]], "summary"))
    page.add(_notes_html(s["notes"]))
    page.figure(_store_timeline(s))
    page.figure(_store_coverage(s))
    if s["consumer_progress"]:
        page.add("<h3>Consumer progress</h3>" + _table(
            ["group", "topic", "queue", "committed offset", "queue end (CommitLog)", "lag"],
            [[c["group"], c["topic"], c["queue_id"], c["committed_offset"],
              "-" if c["max_queue_offset"] is None else c["max_queue_offset"], "-" if c["lag"] is None else c["lag"]]
             for c in s["consumer_progress"]]))
    page.add("<h3>Findings</h3>" + _findings_html(s["findings"], s["root"]))
    page.add("<details><summary>Queues</summary>" + _table(
        ["topic", "queue", "messages", "bytes", "queue offsets", "first store time", "last store time"],
        [[q["topic"], q["queue_id"], q["messages"], q["bytes"], f"{q['first_queue_offset']}..{q['last_queue_offset']}",
          iso(q["first_timestamp"]), iso(q["last_timestamp"])] for q in s["queues"]]) + "</details>")
    page.add("</section>")


_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}
td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0}
table.findings td:last-child{max-width:60em}
.notes,.note{color:#555;font-size:13px}
section{border-top:2px solid #888;margin-top:2em}
"""


def write_report(paths: list[str], out: str, force: bool = False, **options) -> ReportFigures:
    """``report``'s figures of ``paths`` written to ``out`` as the page; the output is checked before
    anything is read (not inside an input, not over a file unless ``force``, which keeps a backup)."""
    from segtool.engine.safe_write import plan_outputs, write_atomically
    from segtool.ops.report import report

    plan_outputs([out], paths, in_place=False, force=force)
    figures = report(paths, **options)
    write_atomically(out, report_html(figures).encode(), replace=force)
    return figures


def _copies_note(figures: ReportFigures) -> str:
    """How many sections below are copies of one partition or store: each is one broker's, none summed."""
    copies = [p for p in figures["partitions"] if p["replica_set"] is not None]
    stores = [s for s in figures["stores"] if s["replica_set"] is not None]
    if not copies and not stores:
        return ""
    words = []
    if copies:
        words.append(f"{len(copies)} of the {len(figures['partitions'])} partition sections below are copies of "
                     f"{len({p['replica_set'] for p in copies})} partitions held by several brokers")
    if stores:
        words.append(f"{len(stores)} of the {len(figures['stores'])} store sections are copies in "
                     f"{len({s['replica_set'] for s in stores})} replica sets")
    return (f"<p class=note>{html.escape('; '.join(words))}: each section is one broker's copy, named in its "
            "heading, and no figure is summed across sections; the replicas sections compare the copies.</p>")


def _copy_of(section: dict) -> str:
    if section["replica_set"] is None:
        return ""
    return f" ({section['broker']}'s copy)"


def report_html(figures: ReportFigures) -> str:
    """The whole page: every partition and store with its figures and findings, the figures as JSON."""
    page = _Page()
    summary = figures["summary"]
    page.add(f"<h1>segtool report</h1><p>{html.escape(', '.join(figures['inputs']))}<br>"
             f"made {iso(figures['generated_at'])} (the reference time for future timestamps); "
             f"verify: {summary['files']} files, {summary['ok']} ok, {summary['problems']} with problems, "
             f"{summary['unreadable']} unreadable, {summary['skipped']} skipped</p>")
    if figures["partitions"]:
        page.add("<p class=note>Every point of a timeline is a group of consecutive batches of one segment (one "
                 "batch when a partition has few); index entries and events beyond the caps are counted, not drawn; "
                 "findings beyond the listed ones are drawn in bins along the offsets. Each section says where it "
                 "aggregated.</p>")
    page.add(_notes_html(figures["notes"]))
    replicas = figures["replicas"]
    if replicas is not None:
        page.add(_copies_note(figures))
        for number, replica_set in enumerate(replicas["kafka"]):
            _kafka_replicas_section(page, replica_set, number)
        for number, replica_set in enumerate(replicas["rocketmq"]):
            _rocketmq_replicas_section(page, replica_set, number)
        page.add(_notes_html(replicas["notes"] + [f"{s['path']}: {s['reason']}" for s in replicas["skipped"]]))
    for partition in figures["partitions"]:
        _partition_section(page, partition)
    for store in figures["stores"]:
        _store_section(page, store)
    if figures["other_findings"]["total"]:
        page.add("<section><h2>Other files</h2>" + _findings_html(figures["other_findings"]) + "</section>")
    return ("<!DOCTYPE html><html><head><meta charset=utf-8><title>segtool report</title>"
            f"<style>{_STYLE}</style>{_plotly_loader()}</head><body>" + "".join(page.parts)
            + f'<script type="application/json" id="segtool-figures">{_script_json(figures)}</script>'
            "</body></html>\n")
