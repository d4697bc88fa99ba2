#[path = "../../irdump.rs"]
mod irdump;

static KERNELS: &[(&str, irdump::ModuleFn)] =
    &[("template_kernel", tileport_port::template_kernel::port::__module_ast_self)];

fn main() {
    irdump::main_with(KERNELS, "template");
}
