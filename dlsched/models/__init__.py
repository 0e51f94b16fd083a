"""Declarative formulations, one module per family: Pyomo, CVXPY and matrix builders."""
