"""_selftest room: proof that the kit's cases bite and that the runner survives a misbehaving program.

* ``breaks/``: the deliberately broken implementations, one module per area of the clause catalogue,
  each registered where it is defined (``base.break_of``);
* ``stores/``: the broken session stores of the store profile, by SS- area, and their selftest;
* ``proofs``: the selftest itself; ``verdicts``: the verdict both profiles share;
* ``compliant``: compliant alternatives the kit must accept; ``wire_variants``: the base of the breaks
  and alternatives that change what goes on the wire; ``interop_dialect``: a private row dialect for the
  interop check.
"""
