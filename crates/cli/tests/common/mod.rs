//! Running the `txftl` binary as a user would, for the CLI tests.

use std::process::Command;

/// Runs `txftl ARGS`: (exit code, standard output, standard error).
pub fn txftl(args: &[&str]) -> (i32, String, String) {
    txftl_env(args, &[])
}

/// Runs `txftl ARGS` with environment variables set. Unless `env` sets
/// `COLUMNS`, it is 10000: the tests read the text unwrapped (the width
/// rule itself is tested with [`txftl_piped`]).
pub fn txftl_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_txftl"));
    cmd.env("COLUMNS", "10000").envs(env.iter().copied());
    output(cmd.args(args))
}

/// Runs `txftl ARGS` as `txftl ARGS | ...` does with no `COLUMNS` set (its
/// default output fits 100 columns).
#[allow(dead_code)] // not every test file uses it
pub fn txftl_piped(args: &[&str]) -> (i32, String, String) {
    output(Command::new(env!("CARGO_BIN_EXE_txftl")).env_remove("COLUMNS").args(args))
}

fn output(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().expect("run txftl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
