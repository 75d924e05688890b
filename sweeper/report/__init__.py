"""Reports built from a sweep's records alone (pandas, matplotlib).

``commands`` is what the CLI calls: ``write_report`` (report.md, summary.json,
records.parquet, charts/*.png), ``diff_command`` and ``publish``. The pipeline runs one
way: ``load`` (records.jsonl + sweep.json -> frames) -> ``aggregate`` / ``roadmap``
(``analysis`` gathers them) -> ``markdown`` / ``sections`` (text, escaped by ``escape``),
``charts``, ``export``; ``diff`` and ``publish`` build on the same pieces.
"""
