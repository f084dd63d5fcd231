"""Personalizer's administration API mapped onto a banditree ranking model.

:mod:`.configuration` (service configuration and policy <-> the model's explorer, mode
and event policy), :mod:`.model_files` (model export, import, reset and properties; log
properties and deletion), :mod:`.evaluations` (offline evaluations and feature
importances as background jobs, :mod:`service.domain.jobs`).  The routes are in
:mod:`service.http.routes.personalizer_admin`; ``docs/howto/migrate-from-personalizer.md``
has the mapping operation by operation.
"""
