//! The manual pages and the shell completions cover every verb and every option, whoever adds
//! them: walked from the command-line definition itself, and read from what the real binary
//! prints. Bash completes `send --key` with key names, not file names.

use std::path::Path;
use std::process::{Command, Stdio};

use clap::CommandFactory;
use phux_ctl::cli::Cli;

use crate::support::Ctl;

/// Every verb as its word path (`["outbox", "drop"]`), with its long options.
fn verbs(cmd: &clap::Command, path: &[String], out: &mut Vec<(Vec<String>, Vec<String>)>) {
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        let mut words = path.to_vec();
        words.push(sub.get_name().to_owned());
        let longs = sub
            .get_arguments()
            .filter(|a| !a.is_hide_set() && !a.is_global_set())
            .filter_map(|a| a.get_long().map(str::to_owned))
            .filter(|l| l != "help" && l != "version")
            .collect();
        out.push((words.clone(), longs));
        verbs(sub, &words, out);
    }
}

#[test]
fn every_verb_has_a_page_with_every_option_and_is_completed() {
    let ctl = Ctl::at(Path::new("/nonexistent/phux.sock"));
    let mut all = Vec::new();
    verbs(&Cli::command(), &[], &mut all);
    assert!(all.len() > 15, "{all:?}");
    let bash = ctl.ok(&["completions", "bash"]);
    let zsh = ctl.ok(&["completions", "zsh"]);
    let top = ctl.ok(&["man"]);
    let mut missing = Vec::new();
    for (words, longs) in &all {
        let mut args = vec!["man"];
        args.extend(words.iter().map(String::as_str));
        let page = ctl.ok(&args);
        let name = format!("phuxctl\\-{}", words.join("\\-"));
        if !page.contains(&format!(".TH phuxctl-{} 1", words.join("-"))) {
            missing.push(format!("{words:?}: no page named {name}"));
        }
        for long in longs {
            let roff = format!("\\-\\-{}", long.replace('-', "\\-"));
            if !page.contains(&roff) {
                missing.push(format!("{words:?}: --{long} not on its page"));
            }
            for (shell, script) in [("bash", &bash), ("zsh", &zsh)] {
                if !script.contains(&format!("--{long}")) {
                    missing.push(format!("{words:?}: --{long} not in the {shell} completion"));
                }
            }
        }
        let last = words.last().expect("a word");
        if !bash.contains(last.as_str()) {
            missing.push(format!("{words:?}: not in the bash completion"));
        }
        // phuxctl(1) names the page of each verb it lists.
        if words.len() == 1 && !top.contains(&name) {
            missing.push(format!("{words:?}: phuxctl(1) does not name {name}(1)"));
        }
    }
    assert!(missing.is_empty(), "{missing:#?}");

    // `man --dir` writes those very pages.
    let dir = tempfile::tempdir().expect("tempdir");
    ctl.ok(&["man", "--dir", dir.path().to_str().expect("utf-8")]);
    for (words, _) in &all {
        let file = dir.path().join(format!("phuxctl-{}.1", words.join("-")));
        assert!(file.is_file(), "{} not written", file.display());
    }
    assert!(dir.path().join("phuxctl.1").is_file());
    let out = ctl.run(&["man", "no-such-verb"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn bash_completes_send_key_with_key_names_not_file_names() {
    phux_testkit::require_programs!("bash");
    let ctl = Ctl::at(Path::new("/nonexistent/phux.sock"));
    let script = ctl.ok(&["completions", "bash"]);
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("completion.bash"), script).expect("write");
    // A file that file-name completion would offer for `En`.
    std::fs::write(dir.path().join("Enfile"), "").expect("write");
    let out = Command::new("bash")
        .current_dir(dir.path())
        .arg("-c")
        .arg(
            "source ./completion.bash; COMP_WORDS=(phuxctl send 1 --key En); COMP_CWORD=4; \
             COMP_LINE='phuxctl send 1 --key En'; COMP_POINT=${#COMP_LINE}; \
             _phuxctl phuxctl En --key; printf '%s\\n' \"${COMPREPLY[@]}\"",
        )
        .stdin(Stdio::null())
        .output()
        .expect("bash");
    let offered = String::from_utf8_lossy(&out.stdout);
    assert!(offered.lines().any(|l| l.trim() == "Enter"), "{out:?}");
    assert!(!offered.contains("Enfile"), "file names offered: {offered}");
    // Any valid key name is still taken, not only those offered.
    let cli = phux_ctl::cli::parse_from(["phuxctl", "send", "1", "--key", "C-M-S-F17"]);
    assert!(matches!(cli.command, phux_ctl::cli::CtlCommand::Send(_)));
}
