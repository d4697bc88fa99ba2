//! tileport's Tile IR dumper for cuTile Rust kernels (written by this team): the generated ports
//! (`main_with`: the `port` module of each translated kernel file) and NVIDIA's shipped ports
//! (`main_with_modules`: each op's own `#[cutile::module]`, e.g. `matmul_module`).
//!
//! Usage: irdump-<op> <kernel> <entry> <out.tileirbc> <gpu target> <generics,comma,separated> <strides>
//!        [<spec args> <scalar hints>]
//! (<kernel> names the module table entry, <entry> the `#[cutile::entry()]` function.)
//! where <strides> is `name=s0,s1;name2=...` (element strides, -1 = dynamic);
//! <spec args> is `name=shape divisors|stride divisors|stride is one (0/1)|base pointer divisor;...`
//! (a cutile `SpecializationBits` per tensor: what its launcher derives from a tensor, divisors
//! in elements, the pointer's in bytes) and <scalar hints> `name=divisor;...` (a `DivHint` per
//! integer scalar). Without them the kernel is compiled free of launch-time facts.
//! Compiles the kernel's captured module AST with cutile's `KernelCompiler` (no GPU, no
//! driver) and writes Tile IR bytecode; exits 2 on bad arguments, 1 on a compile error.

use cutile::cutile_compiler::ast::Module;
use cutile::cutile_compiler::specialization::{DivHint, SpecializationBits};

pub type ModuleFn = fn() -> Module;

/// One module a dumper can compile: (name on the command line, `#[cutile::module]` name, its AST).
#[allow(dead_code)] // one of the two entry points is unused in each binary
pub type NamedModule = (&'static str, &'static str, ModuleFn);

/// The module name and AST of a command-line kernel name, if the binary holds it.
type Lookup = Box<dyn Fn(&str) -> Option<(&'static str, ModuleFn)> + Send>;

fn parse_strides(spec: &str) -> Result<Vec<(String, Vec<i32>)>, String> {
    let mut out = Vec::new();
    for part in spec.split(';').filter(|p| !p.is_empty()) {
        let (name, vals) = part
            .split_once('=')
            .ok_or_else(|| format!("stride spec '{part}' is not name=s0,s1"))?;
        let vals = vals
            .split(',')
            .map(|v| v.trim().parse::<i32>().map_err(|e| format!("stride '{v}': {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        out.push((name.to_string(), vals));
    }
    Ok(out)
}

fn parse_ints(part: &str, what: &str) -> Result<Vec<i32>, String> {
    part.split(',')
        .filter(|v| !v.is_empty())
        .map(|v| v.trim().parse::<i32>().map_err(|e| format!("{what} '{v}': {e}")))
        .collect()
}

fn parse_specs(spec: &str) -> Result<Vec<(String, SpecializationBits)>, String> {
    let mut out = Vec::new();
    for part in spec.split(';').filter(|p| !p.is_empty()) {
        let (name, vals) = part
            .split_once('=')
            .ok_or_else(|| format!("spec '{part}' is not name=shape|stride|one|ptr"))?;
        let fields: Vec<&str> = vals.split('|').collect();
        if fields.len() != 4 {
            return Err(format!("spec '{part}': want 4 fields separated by '|'"));
        }
        let hint = |d: i32| DivHint { divisor: d, max: 16 };
        let ptr = parse_ints(fields[3], "pointer divisor")?;
        out.push((
            name.to_string(),
            SpecializationBits {
                shape_div: parse_ints(fields[0], "shape divisor")?.into_iter().map(hint).collect(),
                stride_div: parse_ints(fields[1], "stride divisor")?.into_iter().map(hint).collect(),
                stride_one: parse_ints(fields[2], "stride one")?.into_iter().map(|v| v == 1).collect(),
                base_ptr_div: hint(*ptr.first().ok_or_else(|| format!("spec '{part}': no pointer divisor"))?),
                elements_disjoint: true,
            },
        ));
    }
    Ok(out)
}

fn parse_hints(spec: &str) -> Result<Vec<(String, DivHint)>, String> {
    let mut out = Vec::new();
    for part in spec.split(';').filter(|p| !p.is_empty()) {
        let (name, val) = part.split_once('=').ok_or_else(|| format!("hint '{part}' is not name=divisor"))?;
        let d = val.trim().parse::<i32>().map_err(|e| format!("hint '{part}': {e}"))?;
        out.push((name.to_string(), DivHint { divisor: d, max: 16 }));
    }
    Ok(out)
}

fn compile(lookup: &Lookup, args: &[String]) -> Result<(), (i32, String)> {
    if args.len() != 7 && args.len() != 9 {
        return Err((
            2,
            format!("usage: {} <kernel> <entry> <out> <target> <generics> <strides> [<spec args> <scalar hints>]", args[0]),
        ));
    }
    let (kernel, entry, out, target) = (&args[1], &args[2], &args[3], &args[4]);
    let generics: Vec<String> = args[5].split(',').filter(|s| !s.is_empty()).map(String::from).collect();
    let strides = parse_strides(&args[6]).map_err(|e| (2, e))?;
    let stride_refs: Vec<(&str, &[i32])> = strides.iter().map(|(n, s)| (n.as_str(), s.as_slice())).collect();
    let specs = if args.len() == 9 { parse_specs(&args[7]).map_err(|e| (2, e))? } else { Vec::new() };
    let hints = if args.len() == 9 { parse_hints(&args[8]).map_err(|e| (2, e))? } else { Vec::new() };
    let spec_refs: Vec<(&str, SpecializationBits)> = specs.iter().map(|(n, s)| (n.as_str(), s.clone())).collect();
    let hint_refs: Vec<(&str, DivHint)> = hints.iter().map(|(n, h)| (n.as_str(), *h)).collect();
    let (module, module_fn) = lookup(kernel).ok_or_else(|| (2, format!("no kernel '{kernel}' in this crate")))?;
    let artifacts = cutile::compile_api::KernelCompiler::new(module_fn, module, entry)
        .generics(generics)
        .strides(&stride_refs)
        .spec_args(&spec_refs)
        .scalar_hints(&hint_refs)
        .target(target)
        .compile()
        .map_err(|e| (1, format!("cutile compile error: {e}")))?;
    let bytes = artifacts.bytecode().map_err(|e| (1, format!("bytecode: {e}")))?;
    std::fs::write(out, bytes).map_err(|e| (1, format!("write {out}: {e}")))?;
    Ok(())
}

/// Entry point used by each generated crate's `main` (every kernel file holds a module `port`).
/// `--sources-sha` prints the hash of the kernel sources the binary was built from (tileport
/// checks it against the files on disk).
#[allow(dead_code)]
pub fn main_with(kernels: &'static [(&'static str, ModuleFn)], sources_sha: &str) {
    run(Box::new(move |k| kernels.iter().find(|(name, _)| *name == k).map(|(_, f)| ("port", *f))), sources_sha)
}

/// Entry point of a dumper whose modules have their own names (NVIDIA's shipped ports).
#[allow(dead_code)]
pub fn main_with_modules(modules: &'static [NamedModule], sources_sha: &str) {
    run(Box::new(move |k| modules.iter().find(|(name, _, _)| *name == k).map(|(_, m, f)| (*m, *f))), sources_sha)
}

fn run(lookup: Lookup, sources_sha: &str) {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 2 && args[1] == "--sources-sha" {
        println!("{sources_sha}");
        return;
    }
    // cutile's compiler recurses deeply over the kernel AST: give it a large stack.
    let handle = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || compile(&lookup, &args))
        .expect("spawn compiler thread");
    match handle.join() {
        Ok(Ok(())) => {}
        Ok(Err((code, msg))) => {
            eprintln!("{msg}");
            std::process::exit(code);
        }
        Err(_) => {
            eprintln!("cutile compiler panicked");
            std::process::exit(1);
        }
    }
}
