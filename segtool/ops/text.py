"""The text output of the commands, as lines made from their typed reports (dump items and
lookup fields render in ``ops.render``).  The command line only prints them.

Lines for people come as ``(text, style)``: the style is a rich style the command line colours
the line with on a terminal (``None``: plain); piped, only the text is written.  Commands that
write plain text (rebuild-index, trim, salvage, scan, carve, index-keys) get plain strings.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import TYPE_CHECKING, Iterator

from segtool.findings import Severity, errors_first
from segtool.formats.ranges import EMPTY, bounds, span
from segtool.ops.render import answer_lines, damaged_range_text, iso_time, show_text

if TYPE_CHECKING:
    from segtool.ops.lookup import LookupRequest

Styled = tuple[str, str | None]


def _problem_lines(problems: list[dict], indent: str = "") -> Iterator[Styled]:
    for problem in errors_first(problems):
        error = problem.severity is Severity.ERROR
        yield f"{indent}{problem.severity.value:5} {problem.kind.code}: {problem.message}", "red" if error else None


def lookup_lines(answer: dict, request: LookupRequest, full: bool) -> list[str]:
    """A lookup's answer: as mqadmin prints it for its queries, the records as their shape shows
    them when one is asked for (``--key-format`` and so on), else field by field."""
    if request.msg_ids is not None or request.print_msg or "mqadmin" in answer:
        from segtool.ops.mqadmin import mqadmin_answer_lines

        return mqadmin_answer_lines(answer, full)
    if request.shape is None:
        return answer_lines(answer, full)
    from segtool.ops.record_filters import shown_record_lines

    records = answer.get("records") or ([answer["record"]] if answer.get("record") else [])
    lines = answer_lines({name: value for name, value in answer.items() if name not in ("record", "records")}, full)
    for record in records:
        lines.append("")
        lines.extend(shown_record_lines(record, full))
    return lines


def groups_lines(report: dict) -> Iterator[Styled]:
    """``segtool groups``, of a Kafka log dir or of a RocketMQ store (which has delay levels)."""
    return _rocketmq_groups_lines(report) if "delay_levels" in report else _kafka_groups_lines(report)


def no_groups_line(report: dict, group: str | None, path: str) -> str | None:
    """For stderr, when ``groups`` found none."""
    if report["groups"]:
        return None
    named = "" if group is None else " " + repr(group)
    if "delay_levels" in report:
        return f"segtool: no consumer group{named} with committed offsets in {path}"
    return f"segtool: no consumer group{named} in {path}"


def _kafka_groups_lines(report: dict) -> Iterator[Styled]:
    """Per group: its metadata, then each committed partition with its lag."""
    for group in report["groups"]:
        head = f"group {group['group']} (__consumer_offsets-{group['coordinator_partition']})"
        if group["deleted"]:
            head += ": DELETED (tombstone)"
        elif group["protocol"] is not None:
            head += (f": {group['protocol']} protocol, type {show_text(group['protocol_type'])}"
                     f", generation {group['generation']}, assignor {show_text(group['assignor'])}"
                     f", leader {show_text(group['leader'])}, {len(group['members'])} members")
        else:
            head += ": offsets only, no group metadata"
        yield head, "bold"
        for member in group["members"]:
            assigned = " ".join(f"{a['topic']}{a['partitions']}" for a in member["assigned"])
            yield (f"  member {member['member_id']} client {member['client_id']} {member['client_host']}"
                   + (f" assigned {assigned}" if assigned else "")), "dim"
        for committed in group["offsets"]:
            lag = "?" if committed["lag"] is None else committed["lag"]
            end = "not here" if committed["log_end_offset"] is None else committed["log_end_offset"]
            yield (f"  {committed['topic']}-{committed['partition']}: committed {committed['offset']}, log end {end}, "
                   f"lag {lag}" + (f", metadata {show_text(committed['metadata'])}" if committed["metadata"] else ""),
                   "yellow" if isinstance(lag, int) and lag > 0 else None)
    yield from _problem_lines(report["problems"])
    summary = report["summary"]
    at = "" if report["at"] is None else f" as of {report['at']}"
    yield (f"{summary['groups']} groups{at}, {summary['committed_partitions']} committed partitions, "
           f"{summary['groups_deleted']} deleted, {summary['pending_transactional_commits']} transactional commits "
           "awaiting a marker"), "bold"


def _known(value) -> str:
    return "-" if value is None else str(value)


def _rocketmq_groups_lines(report: dict) -> Iterator[Styled]:
    """Per group and topic, each queue's committed offset, bounds, lag and last consumed time;
    the delay levels; then the config files that do not read or differ from their .bak."""
    for group in report["groups"]:
        head = f"group {show_text(group['group'])}"
        if group["subscription_configured"]:
            head += (f": consume {'enabled' if group['consume_enable'] else 'DISABLED'}, "
                     f"{'broadcast allowed' if group['consume_broadcast_enable'] else 'no broadcast'}, "
                     f"retry max {_known(group['retry_max_times'])}")
        else:
            head += ": not in subscriptionGroup.json"
        yield head + f", total lag {_known(group['total_lag'])}", "bold"
        for topic in group["topics"]:
            queues = "not configured" if topic["read_queue_nums"] is None else f"{topic['read_queue_nums']} read queues"
            yield f"  topic {show_text(topic['topic'])} ({queues}), lag {_known(topic['total_lag'])}", None
            for queue in topic["queues"]:
                committed = "none (0)" if queue["committed_offset"] is None else queue["committed_offset"]
                last = queue["last_consumed_timestamp"]
                yield (f"    queue {queue['queue_id']}: committed {committed}, min {_known(queue['min_offset'])}, "
                       f"max {_known(queue['max_offset'])}, lag {_known(queue['lag'])}"
                       + ("" if last is None else f", last consumed stored {iso_time(last)}")
                       + ("" if queue["counted_in_total"] else " (not in the total: mqadmin does not read this queue)"),
                       "yellow" if isinstance(queue["lag"], int) and queue["lag"] > 0 else None)
    for level in report["delay_levels"]:
        delay = "" if level["delay_ms"] is None else f" ({level['delay_ms'] // 1000} s by default)"
        yield (f"delay level {level['delay_level']}{delay}: queue {level['queue_id']} offset {_known(level['offset'])}, "
               f"max {_known(level['max_offset'])}, pending {_known(level['pending'])}",
               "yellow" if isinstance(level["pending"], int) and level["pending"] > 0 else None)
    for config in report["config_files"]:
        if config["loaded_from"] == "backup":
            yield f"{config['name']}: the broker loads {config['name']}.bak (the file does not read)", "red"
    yield from _problem_lines(report["problems"])
    summary = report["summary"]
    queues = "" if report["queues_read"] else " (no consumequeue/ in this copy: no bounds, lag or times)"
    yield (f"{summary['groups']} groups, {summary['topics']} topics, {summary['queues']} queues, total lag "
           f"{_known(summary['total_lag'])}; {summary['delay_levels']} delay levels, "
           f"{_known(summary['pending_delayed'])} delayed messages pending{queues}"), "bold"


def _stats_text(stats: dict, unit: str) -> str:
    if not stats["count"]:
        return "-"
    return f"{stats['min']}..{stats['max']}{unit} (mean {stats['mean']:.1f})"


def transactions_lines(report: dict) -> Iterator[Styled]:
    """Transactional ids, then each transactional partition: counts, LSO, empty and open transactions."""
    for state in report["transactional_ids"]:
        partitions = state["partitions"] or state["marker_partitions"]
        yield (f"transactional id {state['transactional_id']}: producer {state['producer_id']} epoch "
               f"{state['producer_epoch']}, {state['state']}" + (" (TIMED OUT)" if state["timed_out"] else "")
               + f", partitions {' '.join(p['topic'] + str(p['partitions']) for p in partitions) or '-'}, timeout "
               f"{state['timeout_ms']} ms", "yellow" if state["timed_out"] else None)
    for partition in report["partitions"]:
        if not partition["transactional"]:
            continue
        yield (f"{partition['topic']}-{partition['partition']}: {partition['commits']} committed, "
               f"{partition['aborts']} aborted, last stable offset {partition['last_stable_offset']} of log end "
               f"{partition['log_end_offset']}"), "bold"
        yield (f"  size {_stats_text(partition['size_records'], ' records')}, "
               f"{_stats_text(partition['size_batches'], ' batches')}; duration "
               f"{_stats_text(partition['duration_ms'], ' ms')}; {len(partition['aborted_ranges'])} aborted ranges"), None
        for empty in partition["empty_transactions"]:
            yield (f"  empty transaction: producer {empty['producer_id']} epoch {empty['producer_epoch']} "
                   f"{empty['marker']} at offset {empty['marker_offset']}"), "dim"
        for txn in partition["open_transactions"]:
            yield (f"  open transaction: producer {txn['producer_id']} epoch {txn['producer_epoch']}"
                   f" ({txn['transactional_id'] or 'transactional id unknown'}) from offset {txn['first_offset']}, "
                   f"{txn['records']} records" + (f": HANGING, {txn['why']}" if txn["hanging"] else ""),
                   "red" if txn["hanging"] else "yellow")
    yield from _problem_lines(report["problems"])
    summary = report["summary"]
    yield (f"{summary['transactional_ids']} transactional ids, {summary['transactional_partitions']} of "
           f"{summary['partitions']} partitions transactional: {summary['commits']} committed, {summary['aborts']} "
           f"aborted, {summary['open_transactions']} open, {summary['hanging_transactions']} hanging, "
           f"{summary['disagreements']} disagreements"), "bold"


def replicas_lines(report: dict) -> Iterator[Styled]:
    """Per Kafka replica set: each copy, where copies part, each election's cost (best first), producers;
    then the RocketMQ groups, each broker's files hashed (the digests are the JSON's), what was skipped and the
    summary."""
    for replica_set in report["kafka"]:
        yield from _kafka_replica_set_lines(replica_set)
    for line in rocketmq_replicas_lines(report["rocketmq"]):
        yield line, None
    for single in report["single_copies"]:
        yield f"{single['topic']}-{single['partition']}: held by {single['broker']} alone", "dim"
    for broker in report["brokers"]:
        yield _broker_files_line(broker), "dim"
    for skipped in report["skipped"]:
        yield f"skipped {skipped['path']}: {skipped['reason']}", "dim"
    for note in report["notes"]:
        yield f"note: {note}", "yellow"
    summary = report["summary"]
    if not report["kafka"] and not report["rocketmq"]:
        yield "nothing here is held by two or more brokers: no copies to compare", "yellow"
    yield (f"{summary['kafka_replica_sets']} Kafka replica sets, {summary['rocketmq_replica_sets']} RocketMQ groups: "
           f"{summary['diverged']} diverged, {summary['damaged']} damaged replicas, "
           f"{summary['committed_loss_at_best']} committed records lost by the best elections"), "bold"


def _broker_files_line(broker: dict) -> str:
    files = broker["files"]
    name = broker["broker"] if broker["broker"] == broker["path"] else f"{broker['broker']} ({broker['path']})"
    size = sum(f["size"] for f in files)
    if files and all(f["sha256"] is None for f in files):
        return f"{name}: {len(files)} files, {size} bytes, not hashed (--no-hash)"
    return f"{name}: {len(files)} files hashed, {size} bytes (each sha256 in --json)"


def _kafka_replica_set_lines(replica_set: dict) -> Iterator[Styled]:
    name = f"{replica_set['topic']}-{replica_set['partition']}"
    topic_id = f" (topic id {replica_set['topic_id']})" if replica_set["topic_id"] else ""
    yield f"{name}{topic_id}: {len(replica_set['replicas'])} replicas", "bold"
    for replica in replica_set["replicas"]:
        epochs = " ".join(f"{e['epoch']}@{e['start_offset']}" for e in replica["leader_epoch_cache"]) or "none"
        agree = "" if replica["epochs_agree"] else (
            " (batches carry " + (" ".join(f"{e['epoch']}@{e['start_offset']}" for e in replica["batch_epochs"])
                                  or "no epochs") + ")")
        yield (f"  {replica['broker']}: offsets {replica['log_start_offset']}..{replica['log_end_offset']} "
               f"(log end), high watermark {_unknown(replica['high_watermark'])}, {replica['records']} records; "
               f"epochs {epochs}{agree}"), None
        damage = replica["damage"]
        if damage["recovery_cut"] is not None:
            cut, beyond = damage["recovery_cut"], damage["beyond_recovery"]
            yield (f"    damaged: the load cuts {os.path.basename(cut['segment'])} at byte {cut['byte']} "
                   f"(offset {cut['offset']}); {beyond['records']} records lie beyond "
                   f"({beyond['salvageable']} salvageable)"), "red"
        if damage["checksum_mismatches"]:
            yield f"    damaged: {damage['checksum_mismatches']} batches fail their CRC", "red"
        for gap in replica["gaps"]:
            yield f"    without: {gap}", "dim"
        for note in replica["notes"]:
            yield f"    note: {note}", "dim"
    for note in replica_set["notes"]:
        yield f"  note: {note}", "dim"
    for missing in replica_set["unreadable"]:
        yield f"  {missing['broker']}: unreadable, {missing['problem']}", "red"
    for pair in replica_set["pairs"]:
        if pair["diverged"]:
            a, b = pair["a_first_differing"], pair["b_first_differing"]
            yield (f"  {pair['a']} and {pair['b']} part at offset {pair['agreed_until']}: {pair['a']} "
                   f"{os.path.basename(a['segment'])} byte {a['byte']} (epoch {a['epoch']}), {pair['b']} "
                   f"{os.path.basename(b['segment'])} byte {b['byte']} (epoch {b['epoch']}); past it "
                   f"{pair['a_past']['records']} vs {pair['b_past']['records']} records"), "red"
        elif pair["a_past"]["records"] or pair["b_past"]["records"]:
            ahead, past = (pair["a"], pair["a_past"]) if pair["a_past"]["records"] else (pair["b"], pair["b_past"])
            yield (f"  {pair['a']} and {pair['b']} agree to offset {pair['agreed_until']}; {ahead} holds "
                   f"{past['records']} more records ({span(past['first_offset'], past['last_offset'])})"), None
        else:
            yield f"  {pair['a']} and {pair['b']} hold the same batches", "green"
    candidates = sorted(replica_set["candidates"], key=lambda c: (c["broker"] != replica_set["best_candidate"],
                                                                  c["committed_records_lost"], c["records_lost"]))
    if candidates:
        yield f"  electing each (new leader epoch {replica_set['new_leader_epoch']}):", None
    for candidate in candidates:
        best = " (best)" if candidate["broker"] == replica_set["best_candidate"] else ""
        best += " (no KRaft vote elects it)" if candidate["electable"] is False else ""
        style = ("red" if candidate["committed_records_lost"] else "green") if best else None
        yield (f"    {candidate['broker']}{best}: loses {candidate['records_lost']} records, "
               f"{candidate['committed_records_lost']} of them committed"), style
        for follower in candidate["followers"]:
            rules = ", ".join(dict.fromkeys(r["rule"] for r in follower["rounds"]))
            if not follower["dropped_records"]:
                yield f"      {follower['broker']} keeps its log to {follower['truncate_to']} ({rules})", "dim"
                continue
            yield (f"      {follower['broker']} truncates to {follower['truncate_to']} ({rules}; "
                   f"{len(follower['rounds'])} round(s)): drops {follower['dropped_records']} records, "
                   f"{follower['refetched_records']} fetched again"), None
            for run in follower["dropped"][:_RUNS_SHOWN]:
                if run["on_new_leader"]:
                    continue
                producer = "" if run["producer_id"] < 0 else (
                    f", producer {run['producer_id']} epoch {run['producer_epoch']} sequences "
                    f"{run['first_sequence']}..{run['last_sequence']}")
                yield (f"        lost {span(run['first_offset'], run['last_offset'])} epoch {run['leader_epoch']}, "
                       f"{run['records']} records ({run['committed_records']} committed), "
                       f"{iso_time(run['first_timestamp'])} .. {iso_time(run['max_timestamp'])}{producer}"), "yellow"
            if len(follower["dropped"]) > _RUNS_SHOWN:
                yield f"        ... {len(follower['dropped']) - _RUNS_SHOWN} more runs (--json lists them)", "dim"
        for gap in candidate["sequence_gaps"]:
            yield (f"      producer {gap['producer_id']} epoch {gap['producer_epoch']}: last sequence "
                   f"{gap['last_sequence_on_new_leader']} here, {gap['last_sequence_elsewhere']} on {gap['held_by']}"), "yellow"
        for txn in candidate["hanging_transactions"]:
            yield (f"      producer {txn['producer_id']}: transaction from offset {txn['first_offset']} left hanging "
                   f"(its marker at {txn['marker_offset_elsewhere']} is only on {txn['held_by']})"), "red"


_RUNS_SHOWN = 20


def _unknown(value) -> str:
    return "unknown" if value is None else str(value)


def _salvage_text(salvage: dict) -> str:
    """What reading past damage keeps after the recovery point, in words."""
    if "batches" in salvage:  # Kafka
        if not salvage["batches"]:
            return "no valid batch after the recovery point"
        return (f"{salvage['batches']} valid batches after the recovery point, {salvage['records']} records, "
                f"{span(salvage['first_offset'], salvage['last_offset'])} (segtool salvage writes them back)")
    if not salvage["messages"]:
        return "no valid message after the recovery point"
    return (f"{salvage['messages']} valid messages after the recovery point, physical offsets "
            f"{bounds(salvage['first_phy_offset'], salvage['last_phy_offset'])} (segtool salvage writes them back)")


_STATUS_STYLES = {"ok": "green", "problems": "red", "unreadable": "red", "skipped": "dim"}


def _verified_file_head(item: dict) -> str:
    digest = item.get("sha256") or "not hashed"
    return (f"{item['status'].upper():10} {item['path']}  ({item.get('kind')}, {item.get('size', '?')} bytes,"
            f" sha256 {digest})")


def verify_lines(report: dict) -> Iterator[Styled]:
    """Problems first, in one screen; then the clean and skipped files, one line each."""
    summary = report["summary"]
    yield (f"{summary['files']} files: {summary['ok']} ok, {summary['problems']} with problems, "
           f"{summary['unreadable']} unreadable, {summary['skipped']} skipped"), "bold"
    bad = [item for item in report["files"] if item["status"] in ("problems", "unreadable")]
    for item in bad:
        yield "", None
        yield _verified_file_head(item), _STATUS_STYLES[item["status"]]
        ordered = errors_first(item.get("problems", []))
        errors = [p for p in ordered if p.severity is Severity.ERROR]
        infos = ordered[len(errors):]
        for problem in errors + infos[:20]:
            where = "" if problem.byte_offset is None else f" at byte {problem.byte_offset}"
            yield (f"  {problem.severity.value:5} {problem.kind.code}{where}: {problem.message}",
                   "red" if problem.severity is Severity.ERROR else None)
        if len(infos) > 20:
            yield f"  info  … {len(infos) - 20} more notes (see --json)", None
        recovery = item.get("recovery")
        if recovery and recovery.get("bytes_lost"):
            broker = "RocketMQ" if item.get("kind", "").startswith("rocketmq") else "Kafka"
            yield (f"  {broker}'s recovery would keep {recovery['valid_bytes']} bytes and cut "
                   f"{recovery['bytes_lost']} ("
                   + (f"{recovery['messages_lost']} messages" if "messages_lost" in recovery
                      else f"{recovery['records_lost']} records") + ", stop: "
                   f"{recovery.get('stop_reason')})"), None
        salvage = (recovery or {}).get("salvage")
        if salvage:
            yield f"  reading past the damage: {_salvage_text(salvage)}", None
    rest = [item for item in report["files"] if item["status"] not in ("problems", "unreadable")]
    if rest:
        yield "", None
    for item in rest:
        if item["status"] == "skipped":
            yield f"{'SKIPPED':10} {item['path']}: {item.get('reason', 'not checked')}", "dim"
            continue
        notes = [p for p in item.get("problems", []) if p.severity is not Severity.ERROR]
        yield (_verified_file_head(item) + (f"  {len(notes)} note(s): {notes[0].message}" if notes else ""),
               _STATUS_STYLES["ok"])


_SPARKS = "▁▂▃▄▅▆▇█"


def _sparkline(values: list[float], width: int = 60) -> str:
    """Values summed into at most ``width`` columns, each drawn as one of eight heights."""
    if not values:
        return "(no timestamps)"
    columns = [sum(values[i * len(values) // width:(i + 1) * len(values) // width])
               for i in range(min(width, len(values)))] if len(values) > width else list(values)
    top = max(columns) or 1
    return "".join(_SPARKS[min(7, int(v / top * 7.999))] if v else " " for v in columns)


def _span_text(count: int, what: str, first, last) -> str:
    if first is None or last is None:
        return "no timestamps"
    seconds = (last - first) / 1000
    rate = f", {count / seconds:.1f} {what}/s" if seconds > 0 else ""
    return f"{iso_time(first)} .. {iso_time(last)} ({seconds:g} s{rate})"


def _plural(count: int, what: str) -> str:
    return f"{count} {what}" if count == 1 else f"{count} {what}{'es' if what.endswith('ch') else 's'}"


def _fitted(text: str, width: int, style: str | None, indent: str = "  ") -> Iterator[Styled]:
    """A line wrapped at words to the terminal's ``width``, its continuation indented one step more."""
    import textwrap

    for line in textwrap.wrap(text, width=max(width, 40), subsequent_indent=indent + "  ", break_on_hyphens=False,
                              break_long_words=True) or [""]:
        yield line, style


def _cut(text: str, width: int) -> str:
    """One line of at most ``width`` columns; the rest is in --json and on the page."""
    return text if len(text) <= width else text[:max(width, 40) - 1] + "…"


def _findings_lines(found: dict, width: int) -> Iterator[Styled]:
    if not found["total"]:
        yield "  findings: none", "green"
        return
    yield from _fitted("  findings: " + ", ".join(f"{kind} {n}" for kind, n in sorted(found["by_kind"].items())),
                       width, "red")
    errors = [f for f in found["shown"] if f["severity"] == Severity.ERROR.value]
    for item in errors[:10]:
        where = "" if item["placed_at"] is None else f" at {item['placed_at']}"
        yield _cut(f"    {item['kind']}{where}: {item['message']}", width), "red"
    if len(errors) > 10:
        yield f"    … {len(errors) - 10} more errors (see --json or --out)", None


def report_lines(figures: dict, width: int = 80) -> Iterator[Styled]:
    """Per partition and store: counts, span, rates, a sparkline of its timeline, what start-up drops,
    its findings; every line fitted to ``width`` columns (the terminal's)."""
    spark = max(10, width - 14)
    for p in figures["partitions"]:
        yield from _fitted(f"Kafka partition {p['directory']}", width, "bold", "")
        yield from _fitted(f"  {_plural(p['segments_total'], 'segment')}, {_plural(p['batches'], 'batch')}, "
                           f"{_plural(p['records'], 'record')}, {p['bytes']} bytes, "
                           f"{span(p['first_offset'], p['last_offset'])}", width, None)
        yield from _fitted(f"  {_span_text(p['records'], 'records', p['first_timestamp'], p['last_timestamp'])}",
                           width, None)
        yield f"  records/s {_sparkline(p['rates']['records_per_second'], spark)}", None
        yield from _fitted(f"  {_plural(p['gaps']['count'], 'offset gap')}, {p['out_of_order']['count']} "
                           f"out-of-order and {p['future']['count']} future timestamps; transactions "
                           f"{p['transactions']['committed']} committed, {p['transactions']['aborted']} aborted, "
                           f"{p['transactions']['open']} open", width, None)
        startup = p["startup"]
        if startup is not None and startup["truncated_file"] is not None:
            yield from _fitted(
                f"  at start-up Kafka truncates {os.path.basename(startup['truncated_file'])} at byte "
                f"{startup['truncated_at_byte']}" + (f" and deletes {_plural(startup['segments_deleted'], 'later segment')}"
                                                     if startup["segments_deleted"] else "")
                + (f": {span(startup['dropped_first_offset'], startup['dropped_last_offset'])} dropped "
                   f"({_plural(startup['dropped_records'], 'record')})" if startup["dropped_records"]
                   else ": no record lies past the cut") + "; salvage gets back "
                f"{startup['salvageable_records']}", width, "red")
        elif p["truncation"] is not None:
            truncation = p["truncation"]
            yield from _fitted(f"  Kafka's recovery truncates {os.path.basename(truncation['file'])} at byte "
                               f"{truncation['byte_offset']} (offset {truncation['offset']}, {truncation['reason']})",
                               width, "red")
        yield from _findings_lines(p["findings"], width)
    for s in figures["stores"]:
        yield from _fitted(f"RocketMQ store {s['root']}", width, "bold", "")
        yield from _fitted(f"  {_plural(s['messages'], 'message')}, {s['bytes']} bytes, {_plural(len(s['queues']), 'queue')}, "
                           f"{_plural(len(s['commitlog']), 'CommitLog file')}, {_plural(len(s['index_files']), 'IndexFile')}",
                           width, None)
        yield from _fitted(f"  {_span_text(s['messages'], 'messages', s['first_timestamp'], s['last_timestamp'])}",
                           width, None)
        yield (f"  messages {_sparkline([sum(c) for c in zip(*(q['messages'] for q in s['timeline']['series']))], spark)}",
               None)
        if s["truncation"] is not None:
            yield from _fitted(f"  RocketMQ's recovery cuts at physical offset {s['truncation']['offset']}, dropping "
                               f"{_plural(sum(s['timeline']['dropped_by_recovery']), 'message')} "
                               f"({s['truncation']['reason']})", width, "red")
        yield from _findings_lines(s["findings"], width)
    if figures["other_findings"]["total"]:
        yield "Other files", "bold"
        yield from _findings_lines(figures["other_findings"], width)
    if figures["replicas"] is not None:
        yield from _replicas_summary_lines(figures["replicas"], width)
    summary = figures["summary"]
    yield from _fitted(f"{_plural(summary['files'], 'file')}: {summary['ok']} ok, {summary['problems']} with problems, "
                       f"{summary['unreadable']} unreadable, {summary['skipped']} skipped", width, "bold", "")
    for item in figures["files"]:  # each by its whole path, never cut: what could not be read is evidence too
        if item["status"] == "unreadable":
            yield f"  unreadable: {item['path']}", "red"


def _replicas_summary_lines(replicas: dict, width: int) -> Iterator[Styled]:
    """``report``'s word on copies held by several brokers (``segtool replicas`` gives the whole comparison)."""
    for replica_set in replicas["kafka"]:
        name = f"{replica_set['topic']}-{replica_set['partition']}"
        parted = [p for p in replica_set["pairs"] if p["diverged"]]
        best = next((c for c in replica_set["candidates"] if c["broker"] == replica_set["best_candidate"]), None)
        yield from _fitted(f"Replicas of {name}: {len(replica_set['replicas'])} copies"
                           + (f", parting at offset {min(p['agreed_until'] for p in parted)}" if parted else ", agreeing")
                           + (f"; best election {best['broker']} loses {best['records_lost']} records "
                              f"({best['committed_records_lost']} committed)" if best else ""),
                           width, "red" if parted or (best and best["committed_records_lost"]) else None)
    for group in replicas["rocketmq"]:
        members = [s["broker"] for s in group["stores"]] or [n["broker"] for n in group["nodes"]]
        yield from _fitted(f"RocketMQ {group['layout'].replace('_', '/')} group of {len(members)}: "
                           + ("copies part" if group["diverged"] else "copies agree")
                           + ("; messages would be lost" if group["loses_messages"] else ""),
                           width, "red" if group["diverged"] or group["loses_messages"] else None)


def report_written_lines(figures: dict, out: str) -> Iterator[Styled]:
    """``report --out``: what the page holds."""
    findings = figures["summary"]
    yield (f"wrote {out}: {_plural(len(figures['partitions']), 'partition')}, {_plural(len(figures['stores']), 'store')}, "
           f"{_plural(findings['files'], 'file')} verified"), "bold"


def inspect_lines(report: dict) -> Iterator[Styled]:
    """``segtool inspect``, of Kafka log dirs or of RocketMQ stores."""
    if "log_dirs" in report:
        yield from _kafka_inspect_lines(report)
    if "stores" in report:
        yield from _rocketmq_inspect_lines(report)


def _kafka_inspect_lines(report: dict) -> Iterator[Styled]:
    """Per log dir: its files, then each partition with its startup plan; problems in red."""
    from segtool.ops.inspect import holds_nothing

    for log_dir in report["log_dirs"]:
        meta = log_dir["meta_properties"]
        marker = log_dir["clean_shutdown"]
        yield f"log dir {log_dir['path']}", "bold"
        if holds_nothing(log_dir):
            yield "  nothing found: no partition, meta.properties, checkpoint or .kafka_cleanshutdown here", "yellow"
            for path in log_dir["other_files"]:
                yield f"  other file: {path}", "dim"
            continue
        if meta:
            yield (f"  meta.properties: version {meta['version']}, cluster.id {meta['cluster_id']}, node.id "
                   f"{meta['node_id']}, directory.id {meta['directory_id']}"), None
        yield "  shutdown: " + ("clean (.kafka_cleanshutdown present"
                                + (f", broker epoch {marker['broker_epoch']})" if marker["broker_epoch"] is not None
                                   else ")") if marker["marker_present"]
                                else "UNCLEAN (no .kafka_cleanshutdown): partitions are recovered from their "
                                     "recovery points"), None if marker["marker_present"] else "yellow"
        for checkpoint in log_dir["checkpoints"]:
            yield f"  {checkpoint['name']}: {len(checkpoint['entries'])} entries", None
        for path in log_dir["other_files"]:
            yield f"  other file: {path}", "dim"
        for item in log_dir["unreadable"]:
            yield f"  UNREADABLE {item['path']}: {item['reason']}", "red"
        yield from _problem_lines(log_dir["problems"], "  ")
        for partition in log_dir["partitions"]:
            plan = partition["plan"]
            yield "", None
            yield (f"  {os.path.basename(partition['directory'])} ({partition['state']}, topic id "
                   f"{partition['topic_id']}): {len(partition['segments'])} segments, {partition['bytes']} bytes, "
                   + (span(partition["first_offset"], partition["log_end_offset"] - 1)
                      if partition["first_offset"] is not None else "no batch") + f", leader epochs "
                   f"{len(partition['leader_epochs'])}, producer snapshots {len(partition['producer_snapshots'])}",
                   "bold")
            yield f"    files in {os.path.basename(partition['directory'])}: {' '.join(partition['files'])}", "dim"
            if partition["quorum_state"]:
                state = partition["quorum_state"]
                yield (f"    quorum-state: leader {state['leader_id']} epoch {state['leader_epoch']}, voters "
                       f"{state['current_voters']}"), None
            for snapshot in partition["kraft_snapshots"]:
                yield (f"    KRaft snapshot end offset {snapshot['end_offset']} epoch {snapshot['epoch']}: "
                       f"{snapshot['records']} records"), None
            recovered = plan["recovered_segments"]
            if recovered:
                yield (f"    {plan['loaded_by']} recovers {len(recovered)} segment(s) from base offset "
                       f"{recovered[0]['base_offset']} ({recovered[0]['because']}; recovery point "
                       f"{plan['recovery_point']})"), None
            truncated = plan["truncated_at"]
            if truncated:
                yield (f"    truncates {os.path.basename(truncated['segment'])} at byte {truncated['byte_offset']} "
                       f"(offset {truncated['offset']}), dropping {truncated['bytes_dropped']} bytes and "
                       + (f"{truncated['records_dropped']} record(s) at "
                          f"{span(truncated['offset'], truncated['dropped_until'] - 1)} "
                          f"({truncated['records_salvageable']} salvageable, {truncated['records_gone']} gone)"
                          if truncated["records_dropped"] else "no record")), "red"
            yield from _kraft_plan_lines(plan["kraft_snapshots"])
            yield (f"    after start-up: log end {plan['log_end_offset']}, recovery point "
                   f"{plan['new_recovery_point']}, log start {plan['new_log_start_offset']}"), None
            for note in plan["notes"]:
                yield f"    note: {note}", "dim"
            yield from _problem_lines(partition["problems"], "    ")
    summary = report["summary"].get("kafka", report["summary"])  # a tree of both brokers: each its summary
    yield "", None
    yield (f"{summary['partitions']} partitions: {summary['partitions_recovered']} recovered at start-up, "
           f"{summary['partitions_truncated']} truncated; {summary['errors']} errors, {summary['notes']} notes, "
           f"{summary['unreadable']} unreadable"), "bold"


def _kraft_plan_lines(kraft: dict | None) -> Iterator[Styled]:
    """KafkaMetadataLog's snapshot steps at start-up: which snapshot the log is truncated to, which go."""
    if kraft is None:
        return
    if kraft["failure"] is not None:
        yield f"    KafkaMetadataLog cannot load: {kraft['failure']}", "red"
    if kraft["truncates_to"] is not None:
        ahead = (f"epoch {kraft['latest_epoch']} is above the log's latest epoch {kraft['log_latest_epoch']}"
                 if kraft["latest_epoch"] > kraft["log_latest_epoch"] else
                 f"end offset {kraft['truncates_to']} is past the log end {kraft['log_end_offset']} in epoch "
                 f"{kraft['log_latest_epoch']}")
        yield (f"    truncateToLatestSnapshot: the latest snapshot {os.path.basename(kraft['latest_snapshot'])}'s "
               f"{ahead}: the log is truncated fully and starts at offset {kraft['truncates_to']}"), "red"
    for deleted in kraft["deleted"]:
        yield f"    deletes KRaft snapshot {os.path.basename(deleted['path'])} ({deleted['reason']})", None


def _rocketmq_inspect_lines(report: dict) -> Iterator[Styled]:
    """Per store: shutdown, checkpoint, files, then the start-up plan; problems in red."""
    for store in report["stores"]:
        shutdown, checkpoint, commitlog, plan = store["shutdown"], store["checkpoint"], store["commitlog"], store["plan"]
        yield f"store {store['path']}", "bold"
        yield ("  shutdown: " + ("ABNORMAL (abort file present): the next start runs the abnormal recovery"
                                 if shutdown["last_exit"] == "abnormal" else "normal (no abort file)")
               + (f"; lock file {store['path']}/lock present ({shutdown['lock_content']})" if shutdown["lock_file"]
                  else "; no lock file"),
               "yellow" if shutdown["last_exit"] == "abnormal" else None)
        if checkpoint:
            yield (f"  checkpoint: physicMsgTimestamp {iso_time(checkpoint['physic_msg_timestamp'])}, "
                   f"logicsMsgTimestamp {iso_time(checkpoint['logics_msg_timestamp'])}, indexMsgTimestamp "
                   f"{iso_time(checkpoint['index_msg_timestamp'])}"), None
            yield (f"    newest message {iso_time(checkpoint['last_message_store_timestamp'])}, newest queued "
                   f"message {iso_time(checkpoint['last_unit_store_timestamp'])}, newest index end "
                   f"{iso_time(checkpoint['last_index_end_timestamp'])}"), None
        else:
            yield "  checkpoint: none", None
        if commitlog:
            yield (f"  commitlog: {len(commitlog['files'])} files of {commitlog['configured_file_size']} bytes, "
                   f"{commitlog['messages']} messages, data up to physical offset {commitlog['data_end_phy_offset']}"
                   + ("" if commitlog["names_continuous"] else ", names NOT continuous")), None
            for f in commitlog["files"]:
                span = (f"{f['messages']} messages {f['first_phy_offset']}..{f['last_phy_offset']}, "
                        f"{iso_time(f['first_store_timestamp'])} .. {iso_time(f['last_store_timestamp'])}"
                        if f["messages"] else "no message")
                yield f"    commitlog/{f['name']} {f['size']} bytes: {span}; ends {f['end_kind']} at {f['end_file_offset']}", None
        queues = store["consume_queues"]
        yield (f"  consumequeue: {len(queues)} queues, {sum(q['units'] for q in queues)} units in "
               f"{sum(len(q['files']) for q in queues)} files"), None
        for q in queues:
            if q["directory"] is None:
                yield f"    {q['topic']}/{q['queue_id']}: not on disk; created by the re-dispatch at start", "dim"
                continue
            yield (f"    {q['topic']}/{q['queue_id']}: {len(q['files'])} files, {q['units']} units, max offset "
                   f"{q['max_offset']}, max physical offset {q['max_physic_offset']}"), "dim"
            yield (f"      files in consumequeue/{q['topic']}/{q['queue_id']}: "
                   + " ".join(f["name"] for f in q["files"])), "dim"
        for f in store["index_files"]:
            yield (f"  index/{f['name']}: {f['size']} bytes, geometry {f['hash_slot_num']}/{f['index_num']}, "
                   f"indexCount {f['index_count']}, {iso_time(f['begin_timestamp'])} .. "
                   f"{iso_time(f['end_timestamp'])}, physical offsets {f['begin_phy_offset']}..{f['end_phy_offset']}"), None
        if store["config_files"]:
            yield "  config: " + ", ".join(f"{f['name']} ({f['size']} bytes)" for f in store["config_files"]), None
        for path in store["other_files"]:
            yield f"  other file: {path}", "dim"
        for item in store["unreadable"]:
            yield f"  UNREADABLE {item['path']}: {item['reason']}", "red"
        yield "  start-up plan:", "bold"
        if not plan["loads"]:
            yield ("    DefaultMessageStore.load fails: the broker does not start (files of the wrong length: "
                   + ", ".join(plan["refused_files"]) + ")"), "red"
        recovery = plan["commitlog"]
        if recovery:
            yield (f"    {recovery['method']} from {recovery['start_file']}: stops at physical offset "
                   f"{recovery['max_phy_offset']} ({recovery['stop_kind']}"
                   + (f": {recovery['stop_reason']}" if recovery["stop_reason"] else "") + ")"), None
            cut = recovery["truncated_at"]
            if cut:
                yield (f"    truncates the CommitLog in {cut['file']} at byte {cut['file_offset']}: "
                       f"{cut['bytes_dropped']} bytes, {cut['messages_dropped']} messages dropped "
                       f"({cut['messages_salvageable']} salvageable, {cut['messages_gone']} gone)"), "red"
            if recovery["deleted_files"]:
                yield f"    deletes CommitLog file(s) {', '.join(recovery['deleted_files'])}", None
        if plan["truncates_consume_queues"] or plan["consume_queue_units_dropped"]:
            yield (f"    ConsumeQueues: {plan['consume_queue_units_dropped']} units dropped"
                   + (" (truncateDirtyLogicFiles runs)" if plan["truncates_consume_queues"] else ""),
                   "red" if plan["consume_queue_units_dropped"] else None)
        index = plan["index"]
        if index["destroyed"]:
            yield f"    IndexService.load destroys {', '.join(index['destroyed'])}", "yellow"
        for name, step in (("recovery dispatch", plan["recovery_dispatch"]), ("reput", plan["reput"])):
            if step:
                yield (f"    {name}: {step['messages']} messages from {step['from_file']} to physical offset "
                       f"{step['to_phy_offset']}, {step['units_added']} ConsumeQueue units added"), None
        if index["entries_written"]:
            yield (f"    index: {index['entries_written']} entries for {index['messages_indexed']} messages, "
                   f"{index['files_created']} new file(s)"
                   + (f", appended to {index['appended_to']}" if index["appended_to"] else "")), None
        for note in plan["notes"]:
            yield f"    note: {note}", "dim"
        if plan.get("rocketmq5"):
            yield from _rocketmq5_plan_lines(plan["rocketmq5"])
        yield from _problem_lines(store["problems"], "  ")
        yield "", None
    summary = report["summary"].get("rocketmq", report["summary"])
    yield (f"{summary['stores']} stores: {summary['abnormal_shutdowns']} abnormal shutdowns, "
           f"{summary['stores_not_loading']} not loading, {summary['commitlogs_truncated']} CommitLogs truncated, "
           f"{summary['consume_queue_units_dropped']} ConsumeQueue units dropped, {summary['index_files_destroyed']} "
           f"IndexFiles destroyed; {summary['errors']} errors, {summary['notes']} notes, {summary['unreadable']} "
           "unreadable"), "bold"


def _recovered_file_line(what: str, f: dict) -> tuple[str, str | None]:
    if f["deleted"]:
        return f"      {f['name']}: deleted ({f['on_disk']} {what} on disk)", "red" if f["on_disk"] else None
    if f["dropped"]:
        return f"      {f['name']}: keeps {f['kept']} of {f['on_disk']} {what}, drops {f['dropped']}", "red"
    return f"      {f['name']}: keeps its {f['kept']} {what}", None


def _rocketmq5_plan_lines(plan5: dict) -> Iterator[tuple[str, str | None]]:
    """The 5.x start-up's own recoveries, per file (rocketmq/startup5.py)."""
    yield "    5.x start-up: " + ", ".join(plan5["recoveries"]), None
    for queue in plan5["batch_queues"]:
        yield f"    BatchConsumeQueue {show_text(queue['topic'])}/{queue['queue_id']}: recover ends at {queue['end']}", None
        for f in queue["files"]:
            yield _recovered_file_line("units", f)
    timer = plan5["timer"]
    if timer:
        stop = timer["stop"]
        yield (f"    timer log: recoverAndRevise from {timer['begin_offset']} ({timer['begin_file']}) revises "
               f"{timer['units_revised']} wheel slot entries, ends at {timer['process_offset']}"
               + (f" ({stop['kind']} in {stop['file']} at byte {stop['file_offset']})" if stop else "")), None
        for f in timer["files"]:
            yield _recovered_file_line("units", f)
    for dledger in plan5["dledger"]:
        cut = dledger["cut"]
        yield (f"    DLedger {dledger['directory']}: {dledger['entries']} entries kept, last index "
               f"{dledger['last_index']}" + (f"; cut in {cut['file']} at byte {cut['file_offset']}: {cut['reason']}"
                                              if cut else "")), "red" if cut else None
        for f in dledger["files"]:
            yield _recovered_file_line("entries", f)
    for note in plan5["notes"]:
        yield f"    note: {note}", "dim"


def replaced_lines(written: dict) -> Iterator[str]:
    """What a write replaced: a file with the very same bytes is left alone, another is backed up."""
    if written.get("unchanged"):
        yield "    it held these very bytes already: left as it was, no backup made"
    elif written.get("replaced_sha256"):
        where = f"kept as {written['backup']}" if written.get("backup") else "backed up with its directory"
        yield f"    replaced a file with sha256 {written['replaced_sha256']}, {where}"


def rebuild_lines(report: dict) -> Iterator[str]:
    """Kafka's rebuilt indexes: per segment its entries, what the recovery would cut, the files written."""
    for seg in report["segments"]:
        note = "" if not seg["bytes_kafka_would_truncate"] else (
            f"  (Kafka's recovery would also cut the log at byte {seg['valid_bytes']}: {seg['stop_message']})")
        yield (f"{seg['log']}: {seg['offset_index_entries']} offset entries, "
               f"{seg['time_index_entries']} time entries, {seg['aborted_transactions']} aborted txns{note}")
        for written in seg["written"]:
            yield f"  wrote {written['path']} ({written['size']} bytes, sha256 {written['sha256']})"
            yield from replaced_lines(written)
    if report["skipped"]:
        yield f"{len(report['skipped'])} other files left as they are (not segments; see --json)"


def rebuild_rocketmq_lines(reports: list[dict]) -> Iterator[str]:
    """RocketMQ's rebuilt IndexFiles, per store."""
    for rep in reports:
        for written in rep["files"]:
            yield (f"wrote {written['path']} ({written['entries']} entries, {written['size']} bytes,"
                   f" {written['allocated_bytes']} allocated on disk, sha256 {written['sha256']})")
            yield from replaced_lines(written)
        if rep["backup_dir"]:
            yield (f"  the files replaced or removed were moved from {rep['index_dir']} to {rep['backup_dir']} "
                   "(beside it, where a broker does not load them)")
        for note in rep["notes"]:
            yield f"  note: {note}"


def scan_lines(report: dict) -> Iterator[str]:
    """The dataset written, the time it took, the problems met and the files not scanned."""
    dataset = report["dataset"]
    brokers = ", ".join(f"{kind} {rows}" for kind, rows in dataset["rows_by_broker"].items())
    yield (f"{dataset['rows']} rows ({brokers}) in {dataset['files']} files, "
           f"{dataset['partition_directories']} topic/partition directories, under {dataset['path']}")
    timing = report["timing"]
    yield (f"{report['inputs']['bytes']} input bytes in {report['tasks']} tasks on {report['engine']}"
           f": scan {timing['scan_seconds']} s ({timing['mb_per_second']} MB/s), "
           f"start-up {timing['startup_seconds']} s")
    for problem in report["problems"]:
        where = "" if problem["byte_offset"] is None else f" byte {problem['byte_offset']}"
        yield f"{problem['severity']}: {problem['path']}{where}: {problem['message']}"
    if report["inputs"]["skipped"]:
        yield (f"{len(report['inputs']['skipped'])} other files not scanned (neither segments nor "
               f"CommitLog files), each named in {dataset['report']}")
    committed = report["commit"]
    for removed in committed["removed_staging"]:
        yield f"removed {removed}: the staging folder of an interrupted scan"
    if committed["resumed_tasks"]:
        yield (f"resumed {committed['run']}: {committed['resumed_tasks']} of {report['tasks']} tasks kept from "
               "the interrupted scan")


def scan_check_lines(check: dict) -> Iterator[str]:
    """Whether a scan dataset is complete, and each way it is not."""
    if check["complete"]:
        yield f"complete: {check['out']} holds the {check['files']} parts and {check['rows']} rows its manifest lists"
    else:
        yield f"NOT complete: {check['out']}"
    for problem in check["problems"]:
        yield f"  {problem['path']}: {problem['reason']}"
    for run in check["staging"]:
        yield f"  {run}: the staging folder of a scan that is running or was interrupted"


def carve_lines(report: dict, out: str) -> Iterator[str]:
    """What was found and searched, the first finds not placed, the files written into ``out``."""
    summary, search = report["summary"], report["search"]
    yield (f"{summary['kafka_batches']} Kafka batches ({summary['kafka_records']} records) and "
           f"{summary['rocketmq_messages']} RocketMQ messages in {len(report['inputs'])} files, "
           f"{summary['runs']} runs; {summary['unplaced']} finds not placed")
    yield (f"searched {search['bytes_searched']} bytes: {search['candidates']} candidates, "
           f"{search['checksums']} checksums computed (false finds expected: "
           f"{search['expected_false_finds']:.2g})")
    for item in report["unplaced"][:5]:
        yield f"not placed: {item['file']} byte {item['position']}: {item['reason']}: {item['message']}"
    if summary["unplaced"] > 5:
        yield (f"... and {summary['unplaced'] - 5} more ({len(report['unplaced'])} listed "
               f"in {os.path.join(out, 'carve-report.json')}; all in the Parquet outputs' unplaced column)")
    for written in report["written"]:
        yield f"wrote {written['path']} ({written['size']} bytes, sha256 {written['sha256']})"
        yield from replaced_lines(written)
    yield f"wrote {os.path.join(out, 'carve-report.json')}"


def trim_lines(report: dict) -> Iterator[str]:
    """Per index file its valid entries and the bytes reclaimed; how many files were skipped and why
    (a directory's segments and state files, hundreds: --json lists each); the total."""
    for item in report["files"]:
        where = f" -> {item['written']['path']} (sha256 {item['written']['sha256']})" if item["written"] else ""
        yield f"{item['path']}: {item['valid_entries']} valid entries, {item['bytes_reclaimed']} bytes reclaimed{where}"
        if item["written"]:
            yield from replaced_lines(item["written"])
    reasons = Counter(item["reason"] for item in report["skipped"])
    for reason, count in reasons.items():
        named = next(i["path"] for i in report["skipped"] if i["reason"] == reason) if count == 1 else f"{count} files"
        yield f"skipped {named}: {reason}" + ("" if count == 1 else " (--json lists them)")
    yield f"total reclaimed: {report['bytes_reclaimed']} bytes"


def salvage_lines(report: dict) -> Iterator[str]:
    """Per partition and store: the damaged ranges, what was kept and lost, the files written."""
    for item in report["partitions"] + report["stores"]:
        yield f"{item.get('directory') or item.get('store')} -> {item['out_directory']}"
        for damaged in item["damaged_ranges"]:
            yield f"  damaged {damaged['file']}: {damaged_range_text(damaged)}"
        for conflict in item["conflicts"]:
            yield (f"  not written back: {conflict['file']} byte {conflict['position']}, "
                   f"{span(conflict['first_offset'], conflict['last_offset'])}: {conflict['reason']}")
    for partition in report["partitions"]:
        lost = ", ".join(text for text in (bounds(r["first_offset"], r["last_offset"])
                                           for r in partition["offset_ranges_lost"]) if text != EMPTY) or EMPTY
        yield (f"  {partition['batches_kept']} batches kept, {partition['batches_failed_crc']} failed "
               f"their CRC, offsets lost: {lost}")
        for segment in partition["segments"]:
            for written in segment["written"]:
                yield f"  wrote {written['path']} ({written['size']} bytes, sha256 {written['sha256']})"
                yield from replaced_lines(written)
    for store in report["stores"]:
        lost = sum(r["last_offset"] - r["first_offset"] + 1 for r in store["queue_offsets_lost"])
        yield (f"  {store['messages_kept']} messages kept, {store['messages_failed_crc']} failed their "
               f"body CRC, {lost} queue offsets lost; wrote {len(store['written'])} store files and "
               f"{store['messages_parquet']['path']}")
        for note in store["notes"]:
            yield f"  note: {note}"
    summary = report["summary"]
    yield ("nothing lost" if summary["nothing_lost"] else
           f"{summary['damaged_ranges']} damaged ranges ({summary['bytes_damaged']} bytes); see --json "
           "for every range and lost offset")
    if report["skipped"]:
        yield f"{len(report['skipped'])} other files not written back (each named with its reason in --json)"


def index_keys_lines(report: dict) -> Iterator[str]:
    yield f"indexed {report['records_indexed']} keyed records into {report['index_dir']}"
    for item in report["damage"]:
        yield (f"{item['file']} cannot be read past byte {item['byte']} ({item['message']}): its records before "
               "it are indexed, none after it")


# ---- replicas: RocketMQ ----

def _rocketmq_run_text(run: dict | None, unit: str) -> str:
    if run is None:
        return "none"
    if unit == "entries":
        return f"{run['entries']} entries (index {run['first_index']}..{run['last_index']})"
    return f"{run['messages']} messages, {run['bytes']} bytes [{run['first_offset']}, {run['end_offset']})"


def _rocketmq_message_text(message: dict) -> str:
    return (f"phy {message['phy_offset']} {message['topic']} queue {message['queue_id']} offset "
            f"{message['queue_offset']} stored {iso_time(message['store_timestamp'])} msgId {message['msg_id']}"
            + (f" keys {message['keys']}" if message["keys"] else ""))


def rocketmq_replicas_lines(sets: list[dict]) -> list[str]:
    """Per RocketMQ replica set: its stores or nodes, where each copy agrees with the reference and where
    it parts, and what a rejoin drops."""
    lines = []
    for item in sets:
        members = [s["broker"] for s in item["stores"]] or [n["broker"] for n in item["nodes"]]
        lines.append(f"RocketMQ {item['layout'].replace('_', '/')} set ({item['replication']}): {', '.join(members)}; "
                     f"reference {item['reference']} ({item['reference_reason']})")
        for store in item["stores"]:
            epochs = ", ".join(f"{e['epoch']}@{e['start_offset']}" for e in store["epochs"] or []) or "none"
            lines.append(f"  {store['broker']}: offsets [{store['min_offset']}, {store['max_offset']}), confirm offset "
                         f"{store['confirm_offset'] if store['confirm_offset'] is not None else 'n/a'}, epochs {epochs}")
        for node in item["nodes"]:
            lines.append(f"  {node['broker']}: entries {node['begin_index']}..{node['end_index']} (term "
                         f"{node['end_term']}), committed {node['committed_index']}, "
                         f"{'electable' if node['electable'] else 'not electable'}")
        for member in item["stores"] + item["nodes"]:
            lines.extend(f"    note: {note}" for note in member["notes"])
        for c in item["comparisons"]:
            if c["compared_from"] is None:
                lines.append(f"  {c['other']} vs {c['reference']}: no offset in common")
            elif c["diverged_at"] is not None:
                lines.append(f"  {c['other']} vs {c['reference']}: agree [{c['compared_from']}, {c['agree_to']}), "
                             f"PART at {c['diverged_at']}: only {c['reference']} "
                             f"{_rocketmq_run_text(c['only_reference'], 'messages')}; only {c['other']} "
                             f"{_rocketmq_run_text(c['only_other'], 'messages')}")
                for side in ("only_reference", "only_other"):
                    for message in (c[side] or {"listed": []})["listed"][:5]:
                        lines.append(f"    {c['reference' if side == 'only_reference' else 'other']}: "
                                     f"{_rocketmq_message_text(message)}")
            else:
                lag = (f"lags {c['lag_bytes']} bytes, {c['lag_messages']} messages (lost if {c['reference']}'s disk "
                       "is lost)") if c["lag_bytes"] is not None else (
                    f"is ahead: {_rocketmq_run_text(c['only_other'], 'messages')}")
                lines.append(f"  {c['other']} vs {c['reference']}: agree [{c['compared_from']}, {c['agree_to']}), "
                             f"{c['messages_agreed']} messages; {c['other']} {lag}")
        for c in item["dledger_comparisons"]:
            lines.append(f"  {c['other']} vs {c['reference']}: agree to index {c['agree_to_index']}"
                         + (f", PART at index {c['diverged_at_index']}" if c["diverged_at_index"] is not None else "")
                         + f"; only {c['reference']} {_rocketmq_run_text(c['only_reference'], 'entries')}; only "
                         f"{c['other']} {_rocketmq_run_text(c['only_other'], 'entries')}")
        for r in item["rejoins"]:
            lines.append(f"  {r['follower']} rejoining {r['leader']}: {r['rule']}"
                         + (f", truncated to {r['truncate_to']}, drops {_rocketmq_run_text(r['dropped'], 'messages')}"
                            f" ({r['confirmed_dropped']} confirmed)" if r["truncate_to"] is not None else ""))
        for r in item["dledger_rejoins"]:
            lines.append(f"  {r['follower']} rejoining {r['leader']}"
                         f"{'' if r['leader_electable'] else ' (leader not electable)'}: {r['rule']}"
                         + (f", truncate index {r['truncate_index']}, drops "
                            f"{_rocketmq_run_text(r['dropped'], 'entries')} ({r['committed_dropped']} committed)"
                            if r["truncate_index"] is not None else ""))
        for m in item["committed_missing"]:
            lines.append(f"  {m['lacker']} lacks {_rocketmq_run_text(m['missing'], 'entries')} that {m['holder']} "
                         f"committed (committed index {m['committed_index']})")
        lines.extend(f"  note: {note}" for note in item["notes"])
        verdict = [word for word, flag in (("copies part", item["diverged"]), ("a store is damaged", item["damaged"]),
                                           ("messages would be lost", item["loses_messages"])) if flag]
        lines.append(f"  {'; '.join(verdict) if verdict else 'copies agree'}")
    return lines
