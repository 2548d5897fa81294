"""Crash knowledge in one home: the reviewed known-crash ledger (`ledger`, `known_crashes.json`) with
torch-version bounds, covering both CPU-oracle crashes and backend crashes, and the evidence of
crashes and hangs in earlier runs (`history`).
"""
