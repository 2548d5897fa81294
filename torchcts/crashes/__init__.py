"""Crash knowledge in one home: the reviewed known-crash ledger (`ledger`, `known_crashes.json`) of what
crashes or hangs torch's CPU kernel (the oracle) or a backend, with torch-version bounds (`versions`)
and the case traits a crash needs (`traits`), and the evidence of crashes and hangs in earlier runs
(`history`).
"""
