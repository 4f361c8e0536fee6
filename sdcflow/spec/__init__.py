"""The release spec: one YAML file describing a release.

* :mod:`.schema`: the pydantic models a spec is validated into (:class:`ReleaseSpec` and its
  blocks); the method and gate blocks are the models of :mod:`sdcflow.methods` and
  :mod:`sdcflow.gates`, so the spec sits above them.
* :mod:`.load`: reading a spec file or mapping into a :class:`ReleaseSpec`, every problem one
  ``InputError``.
"""
