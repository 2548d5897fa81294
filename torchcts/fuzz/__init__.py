"""`torchcts fuzz`: budgeted bug hunting; new shrunk counterexamples land in the corpus.
"""
