"""numba's inlining of ``inline="always"`` functions, in time linear in the code inlined.

numba (0.58 to 0.68, ``numba.core.inline_closurecall.InlineWorker``) inlines a function at a
call site by running the compiler's untyped passes over the callee anew, which inline the
callee's own ``inline="always"`` callees anew, and so on down; then it deep-copies the
callee's IR twice, block by block, and each block's copy carries a copy of the whole
function's scope (every variable of the function). The model's kernels nest such functions
three and four deep, and a cold compile spent most of its time there: 40 % of the
discretized model's (docs/performance.md, "Where a cold start's time goes").

:func:`install` replaces two of the worker's methods for this process:

- ``run_untyped_passes`` keeps the IR it made per function (and compiler flags) and hands out
  a shallow copy with a fresh function identity, whose unique name the inliner gives the
  inlined variables: two sites of one function in one caller keep their variables apart, as
  numba's own fresh run gives them;
- ``inline_ir`` is numba's, with its callee copied once, all blocks in one deep copy (one
  scope for the function, as the callee has), instead of twice with a scope per block. The
  "unmutated copy" it returns is the callee IR it was given, which it leaves unchanged
  (numba's callers of it do not use it).

The compiled code is the same: the model's outputs after 20 ms of the built-in drive are
bitwise those of numba's own inlining (``fmu_tests/test_inlining.py`` checks the inliner's
semantics on small functions). The methods are replaced only for the numba versions whose
``inline_ir`` this module's follows (pinned in pyproject.toml); with any other numba,
numba's own run.
"""
from __future__ import annotations

import copy

#: the numba releases whose InlineWorker.inline_ir :func:`_inline_ir` reproduces
VERIFIED_NUMBA = ((0, 58), (0, 68))

#: the untyped IR of each inlined function, per function, pipeline and compiler flags
_untyped_ir: dict = {}


def verified(releases: tuple[tuple[int, int], tuple[int, int]]) -> bool:
    """Whether the installed numba release lies in ``releases`` (first, last), the ones a
    replacement of numba's internals was checked against."""
    import numba

    major, minor = numba.__version__.split(".")[:2]
    low, high = releases
    return low <= (int(major), int(minor)) <= high


def patch_once(owner, mark: str, releases: tuple[tuple[int, int], tuple[int, int]], patch) -> bool:
    """Apply ``patch(owner)``, a replacement of numba's internals on the class ``owner``, once
    per process where the installed numba release lies in ``releases`` (:func:`verified`),
    marking ``owner`` with the attribute ``mark``; returns whether ``owner`` is patched."""
    if getattr(owner, mark, False):
        return True
    if not verified(releases):
        return False
    patch(owner)
    setattr(owner, mark, True)
    return True


def flags_key(flags) -> tuple:
    """numba's compiler flags as a hashable key: each option's name and repr (numba's option
    objects, unhashable, state all their fields in it), sorted by name."""
    return tuple(sorted((name, repr(value)) for name, value in flags.values().items()))


def install() -> bool:
    """Replace numba's inlining methods for this process (once) where its version is
    verified (:data:`VERIFIED_NUMBA`); returns whether they are replaced."""
    from numba.core import inline_closurecall

    return patch_once(inline_closurecall.InlineWorker, "_belt_fmu_inlining", VERIFIED_NUMBA, _replace_inlining)


def _replace_inlining(worker) -> None:
    """Put the memoized untyped passes and :func:`_inline_ir` on numba's ``InlineWorker``."""
    numba_untyped_passes = worker.run_untyped_passes

    def run_untyped_passes(self, func, enable_ssa=False):
        """numba's, once per function, pipeline and flags (module docstring)."""
        self.flags.enable_ssa = enable_ssa  # numba's run sets it on the caller's flags
        key = (func, self._compiler_pipeline, flags_key(self.flags))
        made = _untyped_ir.get(key)
        if made is None:
            made = _untyped_ir[key] = numba_untyped_passes(self, func, enable_ssa)
        fresh = copy.copy(made)  # inline_ir copies the blocks before it changes them
        fresh.func_id = made.func_id.derive()
        return fresh

    worker.run_untyped_passes = run_untyped_passes
    worker.inline_ir = _inline_ir


def _inline_ir(self, caller_ir, block, i, callee_ir, callee_freevars, arg_typs=None):
    """numba's ``InlineWorker.inline_ir`` (BSD-2-Clause, Anaconda, Inc. and others), its
    callee copied once in one deep copy: inline ``callee_ir`` in ``caller_ir`` at statement
    ``i`` of ``block``; returns (the callee IR given, the inlined blocks, the renamed
    variables, the caller's new blocks)."""
    from numba.core import inline_closurecall as inliner
    from numba.core import ir, ir_utils

    given = callee_ir
    callee_ir = callee_ir.copy()
    callee_ir.blocks = copy.deepcopy(given.blocks)  # one memo: one scope, as the callee has
    if self.validator is not None:
        self.validator(callee_ir)
    scope = block.scope
    instr = block.body[i]
    call_expr = instr.value

    # 1. relabel the callee's blocks beyond the caller's
    max_label = max(ir_utils._the_max_label.next(), max(caller_ir.blocks.keys()))
    callee_blocks = ir_utils.simplify_CFG(ir_utils.add_offset_to_labels(callee_ir.blocks, max_label + 1))
    callee_ir.blocks = callee_blocks
    min_label = min(callee_blocks.keys())
    ir_utils._the_max_label.update(max(callee_blocks.keys()))

    # 2. rename the callee's local variables into the caller's scope
    callee_scopes = inliner._get_all_scopes(callee_blocks)
    assert len(callee_scopes) == 1
    callee_scope = callee_scopes[0]
    var_dict = {}
    for var in tuple(callee_scope.localvars._con.values()):
        if var.name not in callee_freevars:
            inlined_name = inliner._created_inlined_var_name(callee_ir.func_id.unique_name, var.name)
            new_var = scope.redefine(inlined_name, loc=var.loc)
            callee_scope.redefine(inlined_name, loc=var.loc)
            var_dict[var.name] = new_var
    ir_utils.replace_vars(callee_blocks, var_dict)

    # 3. the call's arguments for the formal parameters
    args = inliner._get_callee_args(call_expr, callee_ir.func_id.func, block.body[i].loc, caller_ir)

    # 4. the type and call maps
    if self._permit_update_type_and_call_maps:
        if arg_typs is None:
            raise TypeError("arg_typs should have a value not None")
        self.update_type_and_call_maps(callee_ir, arg_typs)
        callee_blocks = callee_ir.blocks
    inliner._replace_args_with(callee_blocks, args)

    # 5. split the caller's block at the call
    new_blocks = []
    new_block = ir.Block(scope, block.loc)
    new_block.body = block.body[i + 1:]
    new_label = ir_utils.next_label()
    caller_ir.blocks[new_label] = new_block
    new_blocks.append((new_label, new_block))
    block.body = block.body[:i]
    block.body.append(ir.Jump(min_label, instr.loc))

    # 6. the callee's returns become assignments to the call's target
    topo_order = ir_utils.find_topo_order(callee_blocks)
    inliner._replace_returns(callee_blocks, instr.target, new_label)
    if instr.target.name in caller_ir._definitions and call_expr in caller_ir._definitions[instr.target.name]:
        caller_ir._definitions[instr.target.name].remove(call_expr)

    # 7. the callee's blocks into the caller, with their definitions
    for label in topo_order:
        inlined = callee_blocks[label]
        inlined.scope = scope
        inliner._add_definitions(caller_ir, inlined)
        caller_ir.blocks[label] = inlined
        new_blocks.append((label, inlined))
    return given, callee_blocks, var_dict, new_blocks
