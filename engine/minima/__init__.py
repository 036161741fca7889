"""Paper B, *Non-attracting regions of local minima in deep and wide neural networks*.

Deep MLPs as flat vectors, the γ-embedding and its Theorem 9 verdicts, the construction pipeline,
minima at infinity, non-increasing paths and the experiments (docs/MATH.md, part B).
"""
