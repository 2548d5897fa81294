"""The coverage audit: which aten overloads of the installed torch the evidence reaches, and what was never tested.

`inventory` lists every overload with its kernels and tags and decides which are backend-relevant;
`exclusions` reads the reviewed exclusions (packaged, then the project's); `audit` gives each relevant
overload one status (OpInfo, suite, generated, excluded, backend-pack, unknown); `evidence` merges
what backend runs actually dispatched. docs/coverage/ states the policy.
"""
