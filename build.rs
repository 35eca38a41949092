//! Places the functions backoff runs as it starts side by side at the start
//! of its code, on Linux: see link/hot-text.ld. `BACKOFF_NO_HOT_TEXT=1`
//! leaves the layout to the linker, for a linker that does not understand
//! the script: GNU ld (bfd) and lld do, gold and mold do not.

fn main() {
    println!("cargo:rerun-if-changed=link/hot-text.ld");
    println!("cargo:rerun-if-env-changed=BACKOFF_NO_HOT_TEXT");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let opted_out =
        std::env::var_os("BACKOFF_NO_HOT_TEXT").is_some_and(|v| !v.is_empty() && v != "0");
    if linux && !opted_out {
        let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
        // The C compiler that drives the link passes `-T FILE` on; as two
        // arguments, a directory name with a comma or a space stays whole.
        println!("cargo:rustc-link-arg-bins=-T");
        println!("cargo:rustc-link-arg-bins={dir}/link/hot-text.ld");
    }
}
