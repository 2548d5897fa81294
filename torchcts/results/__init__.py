"""Result folders: the writer of records.jsonl and run.json (`writer`), the one validating, bounded
reader of result files (`files`), earlier runs on the same hardware (`history`), and the shards of
one run joined into one run folder (`merge`).
"""
