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

/// A `#[cutile::module]` read from a kernel file at run time, as the macro captures it at build
/// time: the module item's source text (from its first token after the `#[cutile::module]`
/// attribute to its closing brace) parsed again, with the span base (file name as rustc names
/// it, 1-based line and 0-based column of that first token) so every location in the Tile IR
/// names the same file:line:col as a build of the crate would (cutile-macro 0.5.0
/// `emit_ast_self_and_registry`).
fn module_from_file(path: &str, file_name: &str, module_path: &str) -> Result<Module, String> {
    use cutile::cutile_compiler::ast::{syn, SpanBase};
    use syn::spanned::Spanned;
    let text = std::fs::read_to_string(path).map_err(|e| format!("read {path}: {e}"))?;
    let file = syn::parse_file(&text).map_err(|e| format!("{path}: not Rust: {e}"))?;
    let is_module_attr = |a: &syn::Attribute| {
        let segs: Vec<String> = a.path().segments.iter().map(|s| s.ident.to_string()).collect();
        segs == ["cutile", "module"]
    };
    let item = file
        .items
        .iter()
        .find_map(|it| match it {
            syn::Item::Mod(m) if m.attrs.iter().any(is_module_attr) => Some(m),
            _ => None,
        })
        .ok_or_else(|| format!("{path}: no #[cutile::module] module"))?;
    let (brace, _) = item.content.as_ref().ok_or_else(|| format!("{path}: the module has no body"))?;
    let mut starts: Vec<(usize, usize)> =
        item.attrs.iter().filter(|a| !is_module_attr(a)).map(|a| (a.span().start().line, a.span().start().column)).collect();
    if !matches!(item.vis, syn::Visibility::Inherited) {
        starts.push((item.vis.span().start().line, item.vis.span().start().column));
    }
    starts.push((item.mod_token.span.start().line, item.mod_token.span.start().column));
    let start = *starts.iter().min().unwrap();
    let end = brace.span.close().end();
    // proc-macro2 counts lines from 1 and columns in chars from 0
    let offset = |(line, col): (usize, usize)| -> usize {
        let line_start: usize = text.split_inclusive('\n').take(line - 1).map(str::len).sum();
        line_start + text[line_start..].chars().take(col).map(char::len_utf8).sum::<usize>()
    };
    let source = &text[offset(start)..offset((end.line, end.column))];
    let parsed: syn::ItemMod = syn::parse_str(source).map_err(|e| format!("{path}: module text does not parse: {e}"))?;
    let name: &'static str = Box::leak(item.ident.to_string().into_boxed_str());
    let mut module = Module::with_span_base(name, parsed, SpanBase::new(file_name.to_string(), start.0, start.1));
    module.set_absolute_path(module_path.to_string());
    Ok(module)
}

/// One compile job of [`main_from_sources`]: `<kernel .rs> <file name for locations> <module path>
/// <entry> <out.tileirbc> <gpu target> <generics> <strides> [<spec args> <scalar hints>]`,
/// tab-separated (the last two as for `compile`: the launch-time specialisation).
fn compile_from_source(line: &str) -> Result<(), (i32, String)> {
    let f: Vec<&str> = line.split('\t').collect();
    if f.len() != 8 && f.len() != 10 {
        return Err((2, format!("job line has {} tab-separated fields, not 8 or 10", f.len())));
    }
    let specs = if f.len() == 10 { parse_specs(f[8]).map_err(|e| (2, e))? } else { Vec::new() };
    let hints = if f.len() == 10 { parse_hints(f[9]).map_err(|e| (2, e))? } else { Vec::new() };
    let spec_refs: Vec<(&str, SpecializationBits)> = specs.iter().map(|(n, s)| (n.as_str(), s.clone())).collect();
    let module = module_from_file(f[0], f[1], f[2]).map_err(|e| (2, e))?;
    let generics: Vec<String> = f[6].split(',').filter(|s| !s.is_empty()).map(String::from).collect();
    let strides = parse_strides(f[7]).map_err(|e| (2, e))?;
    let stride_refs: Vec<(&str, &[i32])> = strides.iter().map(|(n, s)| (n.as_str(), s.as_slice())).collect();
    let hint_refs: Vec<(&str, DivHint)> = hints.iter().map(|(n, h)| (n.as_str(), *h)).collect();
    let name = module.name().to_string();
    let artifacts = cutile::compile_api::KernelCompiler::new(move || module.clone(), &name, f[3])
        .generics(generics)
        .strides(&stride_refs)
        .spec_args(&spec_refs)
        .scalar_hints(&hint_refs)
        .target(f[5])
        .compile()
        .map_err(|e| (1, format!("cutile compile error: {e}")))?;
    let bytes = artifacts.bytecode().map_err(|e| (1, format!("bytecode: {e}")))?;
    std::fs::write(f[4], bytes).map_err(|e| (1, format!("write {}: {e}", f[4])))?;
    Ok(())
}

/// Entry point of tileport's one dumper for every port (built once, no cargo build per kernel):
/// reads compile jobs from stdin, one per line (see [`compile_from_source`]), and prints one
/// line per job in order: `ok`, or `error <exit code> <message with newlines as \n>` (2: bad
/// job, 1: cutile's compiler refused the kernel). A panic of the compiler is that job's error.
#[allow(dead_code)]
pub fn main_from_sources() {
    let handle = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(|| {
            use std::io::{BufRead, Write};
            std::panic::set_hook(Box::new(|_| {}));
            let stdout = std::io::stdout();
            for line in std::io::stdin().lock().lines() {
                let line = line.expect("read stdin");
                if line.trim().is_empty() {
                    continue;
                }
                let res = std::panic::catch_unwind(|| compile_from_source(&line))
                    .unwrap_or_else(|p| {
                        let msg = p.downcast_ref::<String>().cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        Err((1, format!("cutile compiler panicked: {msg}")))
                    });
                let mut out = stdout.lock();
                match res {
                    Ok(()) => writeln!(out, "ok"),
                    Err((code, msg)) => writeln!(out, "error {code} {}", msg.replace('\n', "\\n")),
                }
                .and_then(|_| out.flush())
                .expect("write stdout");
            }
        })
        .expect("spawn compiler thread");
    if handle.join().is_err() {
        std::process::exit(1);
    }
}
