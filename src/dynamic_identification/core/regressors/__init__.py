"""Regressors linear in the standard parameters: the IDIM and the energy / power model; base parameters; and
:class:`~dynamic_identification.core.regressors.dynamic_model.DynamicModel`, the IDIM in base parameters with its
mechanism, drive chain and drive terms, which every stage that builds rows, solves or reports takes."""
