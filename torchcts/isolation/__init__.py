"""Running work where a crash or hang cannot take the run down: a forked child per item or per case
(`fork`) and the policy that says which items run isolated and why (`policy`).
"""
