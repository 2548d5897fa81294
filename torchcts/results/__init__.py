"""Result folders: the writer of records.jsonl and run.json (`writer`), the one validating, bounded
reader of result files (`files`), and earlier runs on the same hardware (`history`).
"""
