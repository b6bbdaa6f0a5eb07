"""Anonymized marginals (Kifer & Gehrke, "Injecting Utility into Anonymized Datasets", SIGMOD 2006):
count tables over some attributes, each generalized to its own level, released beside
a k-anonymous, l-diverse table to give back part of the joint distribution it lost.

- `collection`: marginals, the reduction to induced attributes (Sec. 5.1), a collection's structure;
- `structure`:  interaction graph, triangulation, maximal cliques, perfect sequence, junction tree
                (Sec. 4.1, Def. 6.1), on plain vertex sets;
- `estimate`:   the maximum-entropy estimate (closed form in SQL, Theorem 5.1; IPF in numpy for any
                collection) and its KL-divergence to the original (Sec. 3.2);
- `privacy`:    k-link and k-combinatorial anonymity, maxent l-diversity by Algorithm 1 with pruning
                and by brute force (Sec. 3, 6);
- `search`:     the greedy forward search over decomposable collections (Sec. 5.2) and the
                one-attribute path (Sec. 7);
- `release`:    the marginals as tables (also beside a view release), with manifest entries;
- `session`:    `Marginals(run)`, the Python API over an `Anonymization`;
``sqlanon marginals POLICY`` is in `sqlanon.cli.marginals`.
"""
