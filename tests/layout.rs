//! The house rules the code keeps, read from the source: Cargo features decide which modules
//! exist, never what a line of code does. A feature gate (`#[cfg(feature = ...)]`) stands only
//! on a `mod` or `use` line, or in the one list of protocols (`src/app/protocols/mod.rs`); no
//! `cfg!(feature ...)` in an expression and no `cfg_attr(... feature ...)` (such as an
//! `allow(dead_code)` for a feature combination) anywhere in the crates' code.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

/// Test-only files: unit tests beside the code and the moto support the tests share.
fn test_only(path: &Path) -> bool {
    let name = path.file_name().unwrap().to_string_lossy();
    name.ends_with("_tests.rs") || name == "tests.rs" || name == "moto.rs"
}

#[test]
fn feature_gates_stand_only_on_mod_and_use_lines_and_in_the_list_of_protocols() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src", "crates/core/src", "crates/macros/src"] {
        sources(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "the sources were read");
    let protocols = root.join("src/app/protocols/mod.rs");
    let mut offending = Vec::new();
    for file in files.iter().filter(|f| !test_only(f)) {
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        // Unit tests at the end of a file (`#[cfg(test)] mod tests { ... }`) are not its code.
        let end = lines
            .iter()
            .position(|l| *l == "#[cfg(test)]")
            .unwrap_or(lines.len());
        for (i, line) in lines[..end].iter().enumerate() {
            if line.starts_with("//") {
                continue;
            }
            let gated = line.contains("feature =");
            if !gated {
                continue;
            }
            if line.contains("cfg!(")
                || line.starts_with("#[cfg_attr(")
                || line.starts_with("#![cfg_attr(")
            {
                offending.push(format!("{}:{}: {line}", file.display(), i + 1));
                continue;
            }
            if !line.starts_with("#[cfg(") {
                continue;
            }
            // The item the gate stands on: the next line that is not an attribute.
            let item = lines[i + 1..]
                .iter()
                .find(|l| !l.starts_with("#["))
                .copied()
                .unwrap_or_default();
            let on_mod_or_use = [
                "mod ",
                "pub mod ",
                "pub(crate) mod ",
                "use ",
                "pub use ",
                "pub(crate) use ",
            ]
            .iter()
            .any(|p| item.starts_with(p));
            let in_protocol_list = *file == protocols && item.starts_with("Box::new(");
            if !on_mod_or_use && !in_protocol_list {
                offending.push(format!("{}:{}: {line} on `{item}`", file.display(), i + 1));
            }
        }
    }
    assert!(
        offending.is_empty(),
        "feature gates off mod/use lines:\n{}",
        offending.join("\n")
    );
}

#[test]
fn every_file_in_tests_is_a_module_of_the_one_binary_or_a_binary_of_its_own() {
    // Cargo.toml turns automatic test targets off: a file neither declared there nor a module
    // of tests/main.rs would never run.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let main = std::fs::read_to_string(root.join("tests/main.rs")).unwrap();
    let mut orphans = Vec::new();
    for entry in std::fs::read_dir(root.join("tests")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(module) = name.strip_suffix(".rs") else {
            continue;
        };
        let declared = manifest.contains(&format!("path = \"tests/{name}\""));
        let a_module = main.lines().any(|l| l.trim() == format!("mod {module};"));
        if !declared && !a_module {
            orphans.push(name);
        }
    }
    assert!(orphans.is_empty(), "test files that never run: {orphans:?}");
}

#[test]
fn the_layout_table_names_every_folder_and_file_of_src() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let table = page
        .split("| layer | path | what |")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("docs/architecture.md has its layout table");
    let named: Vec<&str> = table
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|path| path.starts_with("src/"))
        .collect();
    let mut unnamed = Vec::new();
    for entry in std::fs::read_dir(root.join("src")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let cited = if path.is_dir() {
            format!("src/{name}/")
        } else {
            format!("src/{name}")
        };
        if !named.contains(&cited.as_str()) {
            unnamed.push(cited);
        }
    }
    assert!(unnamed.is_empty(), "not in the layout table: {unnamed:?}");
    let gone: Vec<&&str> = named
        .iter()
        .filter(|path| !root.join(path).exists())
        .collect();
    assert!(
        gone.is_empty(),
        "named in the layout table, not in the tree: {gone:?}"
    );
}
