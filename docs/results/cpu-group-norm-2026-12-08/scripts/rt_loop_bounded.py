import glob, sys, os
from pathlib import Path
import cuda.tile._ir.control_flow_ops as cfo
import cuda.tile._bytecode as bc
orig_gen = cfo.Loop.generate_bytecode
def gen(self, ctx):
    if not self.is_for_loop:
        return orig_gen(self, ctx)
    types = tuple(x.get_type() for x in self.body_vars)
    initial_values = [ctx.get_value(v) for v in self.initial_values]
    result_type_ids = [cfo.typeid(ctx.type_table, ty) for ty in types]
    start, stop, step = (ctx.get_value(x) for x in (self.start, self.stop, self.step))
    nb = bc.encode_ForOp(ctx.builder, result_type_ids, start, stop, step, initial_values, unsignedCmp=False)
    iv_t = ctx.typeid_of(self.induction_var)
    with nb.new_block((iv_t, *result_type_ids)) as block_args, ctx.enter_loop(self):
        block_args = iter(block_args)
        iv = next(block_args)
        if self.start.is_constant() and self.stop.is_constant() and os.environ.get("LOOPB"):
            iv = bc.encode_AssumeOp(ctx.builder, iv_t, iv, bc.Bounded(lb=self.start.get_constant(), ub=self.stop.get_constant() - 1))
        ctx.set_value(self.induction_var, iv)
        for var, value in zip(self.body_vars, block_args, strict=True):
            ctx.set_value(var, value)
        cfo.generate_bytecode_for_block(ctx, self.body)
    return nb.done()
cfo.Loop.generate_bytecode = gen
from tileport.cpu import runtime_ir
op="lg_group_norm"; k="_group_norm_bwd_kernel"
v={Path(p).stem: p for p in glob.glob(f"results/{op}/ir_diff/{k}/*.json")}
v={a:b for a,b in v.items() if "NUM_CHANNELS12" in a and not a.startswith("f32")}
d=runtime_ir.run(f"operators/{op}", op, k, f"results/{op}/rust/build.json", v, sys.argv[1] + "/out.json", sys.argv[1] + "/art", archs=("sm_90",))
print(d["verdict"], d["summary"])
