"""Reports built from a sweep's records alone (pandas, matplotlib).

``commands`` is what the CLI calls: ``write_report`` (report.md, summary.json,
records.parquet, charts/*.png) and ``diff_command``; ``publish.publish`` copies a
report to a folder or the Hub. The pipeline runs one
way: ``load`` (records.jsonl + sweep.json -> frames) -> ``aggregate`` / ``roadmap``
(``analysis`` gathers them) -> ``document`` / ``tables`` (text, escaped by ``escape``),
``charts``, ``export``; ``diff`` and ``publish`` build on the same pieces. ``one_model``
is the text ``sweep one`` prints for one record.
"""
