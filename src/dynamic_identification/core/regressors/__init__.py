"""Regressors linear in the standard parameters: the IDIM and the energy / power model; base parameters."""
