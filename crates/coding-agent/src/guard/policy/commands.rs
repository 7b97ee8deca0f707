//! What the policy knows about individual programs: the always-deny list,
//! the always-ask list, the known-safe (read-only) list, the commands that
//! reach the network, and the wrappers that run another command.
//!
//! Every function here looks at one simple command's words (program first,
//! quotes already removed by `shell.rs`). The lists are conservative on
//! purpose: a command that is not clearly read-only asks, and the texts are
//! what the model reads when it is refused.

use super::paths::{Places, USERS_HOME, is_block_device};
use super::shell::{Arg, Upstream, control_escape, digits};

/// The program's name without its directory (`/bin/rm` is `rm`).
pub fn program(words: &[Arg]) -> &str {
    words
        .first()
        .map_or("", |w| w.text.rsplit('/').next().unwrap_or(&w.text))
}

/// A wrapper and the command it runs: `sudo X`, `env A=1 X`, `timeout 5 X`.
pub struct Unwrapped<'a> {
    /// The wrappers' names, outermost first (empty when none).
    pub wrappers: Vec<&'a str>,
    /// The command that finally runs.
    pub inner: &'a [Arg],
}

/// Strips `sudo`, `doas`, `env`, `nice`, `ionice`, `timeout`, `nohup`,
/// `xargs`, `command`, `builtin`, `exec`, `time`, `stdbuf`, `setsid`,
/// `busybox` (`busybox rm` is `rm`), `chroot DIR`, `unshare` with their
/// options.
pub fn unwrap(words: &[Arg]) -> Unwrapped<'_> {
    let mut wrappers = Vec::new();
    let mut rest = words;
    loop {
        let name = program(rest);
        // Options of each wrapper that take a value as the next word.
        let takes_value: &[&str] = match name {
            "sudo" | "doas" => &[
                "--user",
                "--group",
                "--close-from",
                "--chdir",
                "--host",
                "--prompt",
                "--role",
                "--type",
                "--other-user",
                "--command-timeout",
                "--chroot",
            ],
            "env" => &["-u", "-C", "--unset", "--chdir"],
            "nice" => &["-n", "--adjustment"],
            "ionice" => &["-c", "-n", "-p", "-P", "-u"],
            "timeout" => &["-s", "-k", "--signal", "--kill-after"],
            "xargs" => &[
                "-n",
                "-I",
                "-P",
                "-L",
                "-d",
                "-E",
                "-s",
                "-a",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--delimiter",
                "--arg-file",
                "--process-slot-var",
            ],
            "exec" => &["-a"],
            "stdbuf" => &["-i", "-o", "-e"],
            "flock" => &["-w", "--timeout", "-E", "--conflict-exit-code"],
            "watch" => &["-n", "--interval", "-q", "--equexit"],
            "strace" | "ltrace" => &[
                "-o", "-e", "-p", "-s", "-u", "-a", "-I", "-b", "-O", "-S", "-X", "-P",
            ],
            "runuser" => &["-u", "-g", "-G", "--user", "--group", "--supp-group"],
            "setpriv" => &[
                "--reuid",
                "--regid",
                "--groups",
                "--inh-caps",
                "--ambient-caps",
                "--bounding-set",
                "--securebits",
                "--pdeathsig",
                "--selinux-label",
                "--apparmor-profile",
            ],
            "unshare" => &[
                "-S",
                "-G",
                "-R",
                "-w",
                "--setuid",
                "--setgid",
                "--root",
                "--wd",
                "--map-user",
                "--map-group",
                "--map-users",
                "--map-groups",
                "--propagation",
            ],
            "chroot" => &["--userspec", "--groups"],
            "chrt" | "taskset" | "nohup" | "command" | "builtin" | "time" | "setsid"
            | "unbuffer" | "busybox" => &[],
            _ => break,
        };
        // Words before the command that are no option: a duration, a lock
        // file, a priority, a CPU mask.
        let positional = usize::from(matches!(
            name,
            "timeout" | "flock" | "chrt" | "taskset" | "chroot"
        ));
        if name == "command"
            && rest
                .get(1)
                .is_some_and(|w| w.text == "-v" || w.text == "-V")
        {
            break;
        }
        wrappers.push(name);
        let mut i = 1;
        while let Some(word) = rest.get(i) {
            let text = word.text.as_str();
            if text == "--" {
                i += 1;
                break;
            }
            if name == "env" && text.contains('=') && !text.starts_with('-') {
                i += 1;
            } else if text.starts_with('-') && text.len() > 1 {
                let wants_value = takes_value.contains(&text)
                    || (matches!(name, "sudo" | "doas")
                        && cluster_wants_value(text, SUDO_VALUE_LETTERS))
                    || (name == "xargs" && cluster_wants_value(text, "nILPsdaE"));
                i += if wants_value { 2 } else { 1 };
            } else {
                break;
            }
        }
        i += positional.min(rest.len().saturating_sub(i));
        rest = &rest[i.min(rest.len())..];
        if rest.is_empty() {
            break;
        }
    }
    Unwrapped {
        wrappers,
        inner: rest,
    }
}

/// How `xargs` reads its input, by its options (the words between `xargs`
/// and the command it runs).
#[derive(Debug, PartialEq, Eq)]
pub struct XargsReading {
    /// How the items of stdin are told apart; `None` when that cannot be
    /// told: xargs reads another input (`-a FILE`), or an option is known
    /// only at run time.
    pub separator: Option<Separator>,
    /// The text `-I R` (`-i`, `--replace`) replaces in the command's words
    /// with each input line, in place of appending the items.
    pub replace: Option<String>,
    /// The item that ends the input (`-E END`), read at blanks only.
    pub eof: Option<String>,
}

impl XargsReading {
    /// The items xargs reads of `input`; `None` when that cannot be told.
    pub fn items(&self, input: &str) -> Option<Vec<String>> {
        let separator = self.separator.as_ref()?;
        let mut items = separator.items(input, self.replace.is_some())?;
        if let (Separator::Blanks, Some(eof)) = (separator, &self.eof)
            && let Some(end) = items.iter().position(|item| item == eof)
        {
            items.truncate(end);
        }
        Some(items)
    }
}

/// Reads `xargs`'s `options`. `printf '/\0' | xargs -0 rm -rf` was judged
/// as `rm -rf /\0`, and `echo ~ | xargs -I{} sh -c 'rm -rf {}'` as
/// `sh -c 'rm -rf {}' ~`: neither ran what the judged command said.
pub fn xargs_reading(options: &[Arg]) -> XargsReading {
    let mut reading = XargsReading {
        separator: Some(Separator::Blanks),
        replace: None,
        eof: None,
    };
    let mut unknown = false;
    let mut words = options.iter();
    while let Some(word) = words.next() {
        let text = word.text.as_str();
        if !word.literal {
            unknown = true;
        } else if text == "--" {
            break;
        } else if let Some(long) = text.strip_prefix("--") {
            let (name, value) = long
                .split_once('=')
                .map_or((long, None), |(n, v)| (n, Some(v)));
            let is = |full: &str| !name.is_empty() && full.starts_with(name);
            if is("null") {
                reading.separator = Some(Separator::Character('\0'));
            } else if is("delimiter") {
                let value = value
                    .map(str::to_owned)
                    .or_else(|| Some(words.next()?.text.clone()));
                reading.separator = value.as_deref().and_then(Separator::delimiter);
            } else if is("arg-file") {
                unknown = true;
            } else if is("eof") {
                reading.eof = value.filter(|eof| !eof.is_empty()).map(str::to_owned);
            } else if is("replace") {
                reading.replace = Some(value.unwrap_or("{}").to_owned());
            }
        } else if let Some(cluster) = text.strip_prefix('-') {
            for (at, letter) in cluster.char_indices() {
                let rest = &cluster[at + letter.len_utf8()..];
                // A letter with a value takes the rest of the word, or the
                // next word (`-n 1`, `-d :`).
                let mut value = || match rest.is_empty() {
                    true => words.next().map(|word| word.text.clone()),
                    false => Some(rest.to_owned()),
                };
                match letter {
                    '0' => reading.separator = Some(Separator::Character('\0')),
                    'r' | 't' | 'p' | 'x' => {}
                    'I' => {
                        reading.replace = value();
                        // `-I` with no text after it is an error.
                        unknown |= reading.replace.is_none();
                        break;
                    }
                    'i' => {
                        let text = if rest.is_empty() { "{}" } else { rest };
                        reading.replace = Some(text.to_owned());
                        break;
                    }
                    'd' => {
                        reading.separator = value().as_deref().and_then(Separator::delimiter);
                        break;
                    }
                    'a' => {
                        value();
                        unknown = true;
                        break;
                    }
                    'E' => {
                        reading.eof = value();
                        break;
                    }
                    'n' | 'L' | 'P' | 's' => {
                        value();
                        break;
                    }
                    // `-e`, `-l` take only a value in the same word.
                    'e' => {
                        reading.eof = Some(rest.to_owned()).filter(|eof| !eof.is_empty());
                        break;
                    }
                    _ => break,
                }
            }
        }
    }
    if unknown {
        reading.separator = None;
    }
    reading
}

/// How `xargs` tells its items apart.
#[derive(Debug, PartialEq, Eq)]
pub enum Separator {
    /// Blanks and newlines (newlines alone with `-I`), quotes and
    /// backslashes taken away as xargs does.
    Blanks,
    /// One character (`-0`, `-d X`), the text between taken as it is.
    Character(char),
}

impl Separator {
    /// The separator `-d TEXT` names: one character, or an escape of one
    /// (`\n`, `\t`, `\0`); `None` for any other (GNU's octal and hex
    /// escapes are not read here).
    fn delimiter(text: &str) -> Option<Self> {
        let mut chars = text.chars();
        let character = match (chars.next()?, chars.next(), chars.next()) {
            (c, None, _) => c,
            ('\\', Some('n'), None) => '\n',
            ('\\', Some('t'), None) => '\t',
            ('\\', Some('0'), None) => '\0',
            ('\\', Some('\\'), None) => '\\',
            _ => return None,
        };
        Some(Self::Character(character))
    }

    /// The items of `input`, as the command receives them; with `lines`
    /// (`-I`) each line is one item, its leading blanks left out. `None`
    /// for a quote left open, which xargs refuses.
    fn items(&self, input: &str, lines: bool) -> Option<Vec<String>> {
        if let Self::Character(separator) = self {
            let mut items: Vec<String> = input.split(*separator).map(str::to_owned).collect();
            // A last separator ends the last item; it does not start one.
            if items.last().is_some_and(String::is_empty) {
                items.pop();
            }
            return Some(items);
        }
        let mut items = Vec::new();
        let mut item: Option<String> = None;
        let mut chars = input.chars();
        while let Some(c) = chars.next() {
            let ends = match lines {
                true => c == '\n',
                false => c.is_whitespace(),
            };
            if ends {
                items.extend(item.take());
                continue;
            }
            if lines && item.is_none() && c.is_whitespace() {
                continue;
            }
            let text = item.get_or_insert_with(String::new);
            match c {
                '\'' | '"' => loop {
                    match chars.next()? {
                        '\n' => return None,
                        closing if closing == c => break,
                        other => text.push(other),
                    }
                },
                '\\' => text.push(chars.next()?),
                other => text.push(other),
            }
        }
        items.extend(item);
        Some(items)
    }
}

/// sudo's short options that take a value (`-u root`, `-iu root`, `-uroot`).
const SUDO_VALUE_LETTERS: &str = "ugCDhprtTUR";

/// Whether the short-option cluster `text` ends in an option of `letters`,
/// whose value is then the next word (`-iu root`); one followed by more
/// letters has its value attached (`-uroot`).
fn cluster_wants_value(text: &str, letters: &str) -> bool {
    let Some(cluster) = text.strip_prefix('-').filter(|c| !c.starts_with('-')) else {
        return false;
    };
    for (at, c) in cluster.char_indices() {
        if letters.contains(c) {
            return at + c.len_utf8() == cluster.len();
        }
    }
    false
}

/// Programs that change a file's mode, owner, times or extended attributes:
/// the sandbox (Landlock) governs none of these, only creating, writing and
/// removing files.
pub fn changes_attributes(words: &[Arg]) -> bool {
    matches!(
        program(words),
        "chmod" | "chown" | "chgrp" | "chattr" | "setfacl" | "setfattr" | "touch"
    )
}

/// The literal texts of the arguments that are not options (`-x`, `--x`),
/// with everything after `--` an operand.
pub fn operands(words: &[Arg]) -> Vec<&Arg> {
    let mut out = Vec::new();
    let mut options_done = false;
    for word in words.iter().skip(1) {
        if !options_done && word.text == "--" {
            options_done = true;
        } else if options_done || !word.text.starts_with('-') || word.text == "-" {
            out.push(word);
        }
    }
    out
}

/// True when a short-option cluster or a long option among `words` is one of
/// `short` (letters) or `long`, as getopt reads them: a cluster's letters up
/// to its first other character (`-uo out`, `-o/x`: a value may follow at
/// once), and a long option by any prefix (`--rec` is `--recursive`; GNU
/// takes any unambiguous one, and an ambiguous one only errs).
pub fn has_flag(words: &[Arg], short: &str, long: &[&str]) -> bool {
    words
        .iter()
        .skip(1)
        .take_while(|w| w.text != "--")
        .any(|w| {
            let t = w.text.as_str();
            if let Some(name) = t.strip_prefix("--") {
                let name = name.split('=').next().unwrap_or(name);
                !name.is_empty() && long.iter().any(|l| l.starts_with(name))
            } else if let Some(cluster) = t.strip_prefix('-') {
                cluster
                    .chars()
                    .take_while(char::is_ascii_alphabetic)
                    .any(|c| short.contains(c))
            } else {
                false
            }
        })
}

/// Why `words` must never run, when they are on the always-deny list.
pub fn always_denied(words: &[Arg], places: &Places) -> Option<String> {
    let line = super::shell::join(words);
    let name = program(words);
    let never = |what: String| Some(format!("`{line}` {what}; this is never allowed"));
    let protected = |arg: &Arg| places.protected_word(arg);
    match name {
        "rm" | "rmdir" => {
            if has_flag(words, "", &["no-preserve-root"]) {
                return never("turns off rm's protection of /".to_owned());
            }
            if name == "rm"
                && has_flag(words, "rR", &["recursive"])
                && let Some((place, word)) = operands(words)
                    .into_iter()
                    .find_map(|word| Some((protected(word)?, word)))
            {
                return match word.literal || word.braces || place == USERS_HOME {
                    true => never(format!("would delete {place}")),
                    false => never(format!(
                        "would delete {place} if the parts of `{}` known only at run time are empty, as an unset variable is; name the folder itself",
                        word.text
                    )),
                };
            }
            None
        }
        "find" => {
            let starts: Vec<&Arg> = words
                .iter()
                .skip(1)
                .take_while(|w| !w.text.starts_with('-') && w.text != "(" && w.text != "!")
                .collect();
            // `-exec rm {} +` deletes what is found; `-exec rm -f x \;`
            // only `x`, which the command after `-exec` is judged for.
            let deletes = words.iter().any(|w| w.text == "-delete")
                || words.iter().enumerate().any(|(at, w)| {
                    matches!(w.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")
                        && matches!(program(&words[at + 1..]), "rm" | "shred")
                        && words[at + 1..]
                            .iter()
                            .take_while(|w| w.text != ";" && w.text != "+")
                            .any(|w| w.text.contains("{}"))
                });
            // Tests that pick some of the tree: the line is then judged as
            // any deletion is (it asks), not as deleting the place itself.
            const NARROWING: [&str; 23] = [
                "-name",
                "-iname",
                "-path",
                "-ipath",
                "-wholename",
                "-iwholename",
                "-regex",
                "-iregex",
                "-newer",
                "-anewer",
                "-cnewer",
                "-mtime",
                "-mmin",
                "-atime",
                "-amin",
                "-ctime",
                "-cmin",
                "-size",
                "-empty",
                "-user",
                "-group",
                "-perm",
                "-type",
            ];
            let narrowed = words
                .iter()
                .any(|w| NARROWING.contains(&w.text.as_str()) || w.text.starts_with("-newer"));
            let dot = Arg::literal(".");
            let start_places: Vec<&Arg> = if starts.is_empty() {
                vec![&dot]
            } else {
                starts
            };
            // A test picks some of a workspace (`find . -name '*.pyc'
            // -delete`), but of `/` or the home folder it still deletes
            // most of what matters: `find ~ -type f -delete` ran in bypass.
            match start_places.into_iter().find_map(protected) {
                Some(place @ ("the file system root" | "the home directory")) if deletes => never(
                    format!("would delete files all over {place}; start find in the folder meant"),
                ),
                Some(place) if deletes && !narrowed => never(format!("would delete {place}")),
                _ => None,
            }
        }
        "mv" => {
            let ops = operands(words);
            let sources = ops.split_last().map_or(&[][..], |(_, s)| s);
            sources
                .iter()
                .find_map(|a| protected(a))
                .and_then(|place| never(format!("would move away {place}")))
        }
        "chmod" | "chown" | "chgrp" if has_flag(words, "R", &["recursive"]) => operands(words)
            .into_iter()
            .skip(1) // the mode or owner
            .find_map(|a| match protected(a) {
                Some(place @ ("the file system root" | "the home directory")) => Some(place),
                _ => None,
            })
            .and_then(|place| never(format!("would change the permissions of all of {place}"))),
        "wipefs" | "mkswap" | "mke2fs" | "mkdosfs" | "mkntfs" => {
            never("erases a file system or disk".to_owned())
        }
        _ if name.starts_with("mkfs") => never("creates a file system, erasing a disk".to_owned()),
        "dd" => words
            .iter()
            .filter_map(|w| w.text.strip_prefix("of="))
            .any(|target| is_block_device(&places.resolve(target)))
            .then(|| format!("`{line}` writes onto a disk device; this is never allowed")),
        "shred" => {
            let operands = operands(words);
            if operands
                .iter()
                .any(|a| is_block_device(&places.resolve(&a.text)))
            {
                return never("shreds a disk device".to_owned());
            }
            let place = operands.into_iter().find_map(protected)?;
            match has_flag(words, "u", &["remove"]) {
                true => never(format!("would shred and remove the files of {place}")),
                false => never(format!("would shred the files of {place}")),
            }
        }
        // Deleting what the source does not hold empties the destination.
        "rsync"
            if has_flag(
                words,
                "",
                &[
                    "delete",
                    "delete-before",
                    "delete-during",
                    "delete-delay",
                    "delete-after",
                    "delete-excluded",
                ],
            ) =>
        {
            let target = operands(words).last().copied()?;
            match protected(target)? {
                place @ ("the file system root" | "the home directory") => never(format!(
                    "would delete what {place} holds but the source does not"
                )),
                _ => None,
            }
        }
        "git" if git_subcommand(words).0 == "clean" => {
            let (_, args) = git_subcommand(words);
            let forced = args.iter().any(|a| {
                a.text == "--force"
                    || (a.text.starts_with('-')
                        && !a.text.starts_with("--")
                        && a.text.contains('f'))
            });
            // `git -C ~ clean -fdx` cleans the repository there, whole.
            let dir = words
                .windows(2)
                .take_while(|pair| pair[0].text != "clean")
                .find(|pair| pair[0].text == "-C")
                .map(|pair| &pair[1]);
            let named = args.iter().filter(|a| !a.text.starts_with('-'));
            let place = named
                .chain(dir.filter(|_| !args.iter().any(|a| !a.text.starts_with('-'))))
                .find_map(|a| match protected(a) {
                    Some(place @ ("the file system root" | "the home directory")) => Some(place),
                    _ => None,
                });
            match (forced, place) {
                (true, Some(place)) => {
                    never(format!("would delete every untracked file of {place}"))
                }
                _ => None,
            }
        }
        "cp" | "install" | "tee" => operands(words)
            .into_iter()
            .any(|a| is_block_device(&places.resolve(&a.text)))
            .then(|| format!("`{line}` writes onto a disk device; this is never allowed")),
        "shutdown" | "reboot" | "halt" | "poweroff" => {
            never("would stop or restart the machine".to_owned())
        }
        "init" | "telinit"
            if operands(words)
                .iter()
                .any(|a| a.text == "0" || a.text == "6") =>
        {
            never("would stop or restart the machine".to_owned())
        }
        "systemctl"
            if operands(words)
                .iter()
                .any(|a| matches!(a.text.as_str(), "poweroff" | "reboot" | "halt" | "kexec")) =>
        {
            never("would stop or restart the machine".to_owned())
        }
        "kill" | "pkill" if kills_everything(words) => {
            never("would kill every process the user may signal".to_owned())
        }
        _ => None,
    }
}

/// `kill -9 -1`, `kill -KILL -1`, `kill -s KILL -- -1`: pid -1 is every process.
fn kills_everything(words: &[Arg]) -> bool {
    let mut signal_seen = false;
    let mut pids_only = false;
    let mut args = words.iter().skip(1);
    while let Some(word) = args.next() {
        let t = word.text.as_str();
        if pids_only {
            if t == "-1" {
                return true;
            }
        } else if t == "--" {
            pids_only = true;
        } else if t == "-s" || t == "-n" {
            args.next();
            signal_seen = true;
        } else if t == "-1" && signal_seen {
            return true;
        } else if t.starts_with('-') && !signal_seen {
            signal_seen = true;
        } else if t == "-1" {
            return true;
        }
    }
    false
}

/// Why `words` (one stage of a pipeline whose earlier stages are `upstream`)
/// must be asked about even when rules or the mode would let it run.
pub fn always_asked(words: &[Arg], upstream: &Upstream) -> Option<String> {
    let line = super::shell::join(words);
    if is_interpreter(program(words)) {
        let downloads = upstream
            .stages()
            .any(|stage| matches!(program(unwrap(stage).inner), "curl" | "wget" | "fetch"));
        if downloads {
            return Some(format!(
                "`{line}` runs a script piped from a download; piping a download into a shell always needs approval"
            ));
        }
    }
    if program(words) == "git" {
        let (sub, args) = git_subcommand(words);
        // git takes any unambiguous prefix of a long option (`--force-w`,
        // `--mirro`); a refspec known only at run time may start with `+`.
        let forced = sub == "push"
            && (has_flag(
                words,
                "f",
                &["force", "force-with-lease", "force-if-includes", "mirror"],
            ) || args
                .iter()
                .any(|a| a.text.starts_with('+') || (!a.literal && a.text.contains('+'))));
        if forced {
            return Some(format!(
                "`{line}` force-pushes, which can overwrite other people's commits; force-pushing always needs approval"
            ));
        }
    }
    None
}

/// A program that runs code it is given: a script on stdin, `-c`, `-e`.
pub fn is_interpreter(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash"
            | "zsh"
            | "dash"
            | "ksh"
            | "fish"
            | "python"
            | "python3"
            | "perl"
            | "ruby"
            | "node"
            | "php"
    )
}

/// The literal script `bash -c SCRIPT`, `sh -c`, `zsh -c` or `eval ...`
/// runs: `Some(Ok(script))`; `Some(Err(..))` when the script is only known at
/// run time; `None` when `words` is not such a command.
pub fn nested_script(words: &[Arg]) -> Option<Result<String, String>> {
    let name = program(words);
    if name == "eval" {
        let args = &words[1..];
        return Some(if args.iter().all(|a| a.literal) {
            Ok(super::shell::join(args))
        } else {
            Err(format!(
                "`{}` evaluates text only known at run time",
                super::shell::join(words)
            ))
        });
    }
    // `trap 'cat .env' EXIT`: the handler runs as a script of its own.
    if name == "trap" {
        let handler = words.iter().skip(1).find(|a| a.text != "--")?;
        if handler.text.starts_with('-') || handler.text.is_empty() {
            return None;
        }
        return Some(if handler.literal {
            Ok(handler.text.clone())
        } else {
            Err(format!(
                "`{}` sets a handler only known at run time",
                super::shell::join(words)
            ))
        });
    }
    // `git submodule foreach CMD` runs CMD in each submodule, one word
    // through a shell: `git submodule foreach 'rm -rf ~'` ran in bypass.
    if name == "git" && git_subcommand(words).0 == "submodule" {
        let (_, args) = git_subcommand(words);
        let mut args = args.iter().skip_while(|arg| arg.text.starts_with('-'));
        if args.next().is_none_or(|action| action.text != "foreach") {
            return None;
        }
        let command: Vec<Arg> = args
            .skip_while(|arg| arg.text.starts_with('-') && arg.text != "--")
            .skip_while(|arg| arg.text == "--")
            .cloned()
            .collect();
        return Some(match command.as_slice() {
            _ if command.iter().any(|arg| !arg.literal) => Err(format!(
                "`{}` runs a command only known at run time in each submodule",
                super::shell::join(words)
            )),
            [script] => Ok(script.text.clone()),
            _ => Ok(super::shell::join(&command)),
        });
    }
    if !is_shell(name) {
        return None;
    }
    let mut args = shell_words(words);
    while let Some(word) = args.next() {
        let t = word.text.as_str();
        if t.starts_with('-') && !t.starts_with("--") && t.contains('c') {
            let mut script = args.next();
            if script.is_some_and(|s| s.text == "--") {
                script = args.next();
            }
            return Some(match script {
                Some(script) if script.literal => Ok(script.text.clone()),
                _ => Err(format!(
                    "`{}` runs a script only known at run time",
                    super::shell::join(words)
                )),
            });
        }
        if !t.starts_with('-') && !t.starts_with('+') {
            break;
        }
    }
    None
}

/// Which git configuration `words` write, when they are a git command
/// that writes one (a repository's, or with `--global` the user's) or a
/// repository's hooks: `git config` in a form that sets or edits (not
/// `--get`, `--list`, `get`, `list`, or one key alone), `git init
/// --template` and `git clone --template` (which install its hooks) or
/// `git clone -c` (which writes the new repository's config). Sandboxed,
/// `git config core.fsmonitor 'CMD'` ran unasked, and the user's next `git
/// status`, outside the sandbox, ran `CMD`: the same as a write to
/// `.git/config`, which asks.
pub fn changes_git_configuration(words: &[Arg]) -> Option<&'static str> {
    if program(words) != "git" {
        return None;
    }
    let (sub, args) = git_subcommand(words);
    // The subcommand and its arguments, as the option helpers read them.
    let sub_words = &words[words.len() - args.len() - 1..];
    match sub {
        "config" => {
            let operands = operands(sub_words);
            let first = operands.first().map(|word| word.text.as_str());
            let sets = has_flag(
                sub_words,
                "e",
                &[
                    "unset",
                    "unset-all",
                    "add",
                    "replace-all",
                    "rename-section",
                    "remove-section",
                    "edit",
                ],
            ) || matches!(
                first,
                Some("set" | "unset" | "edit" | "rename-section" | "remove-section")
            );
            let reads = has_flag(
                sub_words,
                "l",
                &[
                    "list",
                    "get",
                    "get-all",
                    "get-regexp",
                    "get-urlmatch",
                    "get-color",
                    "get-colorbool",
                ],
            ) || matches!(first, Some("get" | "list"))
                || operands.len() <= 1;
            let which = if has_flag(sub_words, "", &["global"]) {
                "your global git configuration"
            } else if has_flag(sub_words, "", &["system"]) {
                "the machine's git configuration"
            } else if has_flag(sub_words, "f", &["file", "blob"]) {
                "a git configuration file"
            } else {
                "the repository's git configuration"
            };
            (sets || !reads).then_some(which)
        }
        "init" => has_flag(sub_words, "", &["template"]).then_some("the repository's hooks"),
        "clone" => has_flag(sub_words, "c", &["template", "config"])
            .then_some("the new repository's git configuration or hooks"),
        _ => None,
    }
}

/// The git subcommand after global options (`git -C dir push` is `push`),
/// and its arguments.
fn git_subcommand(words: &[Arg]) -> (&str, &[Arg]) {
    let mut i = 1;
    while let Some(word) = words.get(i) {
        match word.text.as_str() {
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" => i += 2,
            t if t.starts_with('-') => i += 1,
            t => return (t, &words[i + 1..]),
        }
    }
    ("", &[])
}

/// Whether setting `name` to `value` before a command can change what the
/// command runs or loads: anything but the locale, the time zone, colours,
/// the terminal's size and a pager that is `cat` (`GIT_CONFIG_*`,
/// `LD_PRELOAD`, another `PAGER`, `GIT_EXTERNAL_DIFF` can all make a reading
/// command run a program).
pub fn changes_what_runs(name: &str, value: &Arg) -> bool {
    let pager = matches!(name, "PAGER" | "GIT_PAGER" | "MANPAGER");
    if pager && value.literal && matches!(value.text.as_str(), "cat" | "") {
        return false;
    }
    !(name.starts_with("LC_")
        || matches!(
            name,
            "LANG"
                | "LANGUAGE"
                | "TZ"
                | "NO_COLOR"
                | "CLICOLOR"
                | "CLICOLOR_FORCE"
                | "FORCE_COLOR"
                | "COLUMNS"
                | "LINES"
                | "TERM"
        ))
}

/// True for a command on the known-safe list: it only reads (`tee` and
/// redirections write only the files they name, which the path rules judge),
/// so it runs unasked in every mode (plan included). See `docs/permissions.md`.
pub fn is_known_safe(words: &[Arg]) -> bool {
    let name = program(words);
    let no_flag = |flags: &[&str]| {
        !words.iter().skip(1).any(|w| {
            flags.iter().any(|f| {
                w.text == *f || (f.starts_with("--") && w.text.starts_with(&format!("{f}=")))
            })
        })
    };
    match name {
        "ls" | "cat" | "head" | "tail" | "wc" | "grep" | "egrep" | "fgrep" | "pwd" | "echo"
        | "printf" | "which" | "whereis" | "type" | "stat" | "du" | "df" | "true" | "false"
        | "uname" | "whoami" | "id" | "basename" | "dirname" | "realpath" | "readlink" | "cut"
        | "tr" | "nl" | "rev" | "seq" | "tac" | "diff" | "cmp" | "comm" | "md5sum" | "sha1sum"
        | "sha256sum" | "sha512sum" | "b2sum" | "cksum" | "nproc" | "free" | "uptime"
        | "printenv" | "column" | "jq" | "test" | "[" | "cd" | "ps" | ":" | "tee" => true,
        "env" | "hostname" => words.len() == 1,
        "date" => !has_flag(words, "s", &["set"]),
        // `-C` compiles a magic file, writing `NAME.mgc`.
        "file" => !has_flag(words, "C", &["compile"]),
        // `--compress-program` runs a program of the caller's choice.
        "sort" => !has_flag(words, "o", &["output", "compress-program"]),
        "tree" => !has_flag(words, "o", &[]),
        "base64" => !has_flag(words, "o", &["output"]),
        "uniq" => operands(words).len() <= 1,
        "find" => no_flag(&[
            "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0",
            "-fprintf",
        ]),
        "rg" => !has_flag(words, "z", &["pre", "pre-glob", "search-zip"]),
        "sed" => sed_prints_lines(words),
        "git" => git_reads_only(words),
        _ => false,
    }
}

/// `sed -n 5p` / `sed -n 1,20p FILE`: the only sed that cannot write.
fn sed_prints_lines(words: &[Arg]) -> bool {
    match words {
        [_, flag, script, files @ ..] if flag.text == "-n" => {
            let (range, p) = script.text.split_at(script.text.len().saturating_sub(1));
            p == "p"
                && !range.is_empty()
                && range.split(',').count() <= 2
                && range
                    .split(',')
                    .all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
                && files.iter().all(|f| !f.text.starts_with('-'))
        }
        _ => false,
    }
}

/// `git status|diff|log|show|branch` without options that write, run
/// programs or change configuration.
fn git_reads_only(words: &[Arg]) -> bool {
    let globals_ok = words
        .iter()
        .skip(1)
        .take_while(|w| w.text.starts_with('-'))
        .all(|w| w.text == "--no-pager");
    if !globals_ok {
        return false;
    }
    let (sub, args) = git_subcommand(words);
    let writes_output = |a: &Arg| a.text.starts_with("--output") || a.text == "--ext-diff";
    match sub {
        "status" => true,
        "diff" | "log" | "show" => !args.iter().any(writes_output),
        "branch" => args.iter().all(|a| {
            matches!(
                a.text.as_str(),
                "-a" | "--all"
                    | "-r"
                    | "--remotes"
                    | "-v"
                    | "-vv"
                    | "--verbose"
                    | "--list"
                    | "--show-current"
                    | "--no-color"
                    | "--color"
            ) || a.text.starts_with("--sort=")
                || a.text.starts_with("--format=")
                || a.text.starts_with("--contains")
                || a.text.starts_with("--merged")
                || a.text.starts_with("--no-merged")
        }),
        _ => false,
    }
}

/// True when the command reaches the network (what `auto` asks about while
/// the sandbox keeps network off).
/// True for a program whose work is done by a process the sandbox does not
/// contain, one it reaches through a socket: `tmux run-shell` and `screen`
/// run commands in their server, `systemd-run`/`systemctl` and `at` in
/// the service manager's or the scheduler's, `docker`/`podman` in the
/// engine's, `dbus-send`/`busctl` ask any service on the bus. Auto mode runs
/// bash unasked because the sandbox holds it; these would step out of it.
pub fn hands_off_outside(words: &[Arg]) -> bool {
    matches!(
        program(words),
        "tmux"
            | "screen"
            | "systemd-run"
            | "systemctl"
            | "at"
            | "batch"
            | "docker"
            | "podman"
            | "nerdctl"
            | "dbus-send"
            | "busctl"
            | "gdbus"
            | "machinectl"
            | "nsenter"
            | "zellij"
            | "kitty"
            | "wezterm"
            | "flatpak-spawn"
            | "emacsclient"
            | "pueue"
            | "lxc"
            | "virsh"
            | "incus"
    )
}

pub fn uses_network(words: &[Arg]) -> bool {
    let name = program(words);
    let sub = words.get(1).map_or("", |w| w.text.as_str());
    match name {
        "curl" | "wget" | "ssh" | "scp" | "sftp" | "rsync" | "nc" | "ncat" | "netcat"
        | "telnet" | "ftp" | "ping" | "dig" | "nslookup" | "host" | "gh" | "npx" | "bunx"
        | "fetch" => true,
        "git" => {
            let (sub, args) = git_subcommand(words);
            let action = args.iter().find(|arg| !arg.text.starts_with('-'));
            let action = action.map_or("", |arg| arg.text.as_str());
            match sub {
                "clone" | "fetch" | "pull" | "push" | "ls-remote" => true,
                // `git remote add origin URL` only writes the config;
                // `update` and `prune` fetch, `show` asks the remote.
                "remote" => {
                    matches!(action, "update" | "prune" | "set-head")
                        || (action == "show" && !args.iter().any(|arg| arg.text == "-n"))
                }
                // `foreach` runs its command here; `update` and `add` clone.
                "submodule" => matches!(action, "update" | "add"),
                _ => false,
            }
        }
        "npm" | "pnpm" | "yarn" | "bun" => {
            matches!(
                sub,
                "install" | "i" | "add" | "ci" | "update" | "publish" | "upgrade" | ""
            )
        }
        "pip" | "pip3" => matches!(sub, "install" | "download"),
        "uv" => matches!(sub, "pip" | "add" | "sync" | "run" | "tool"),
        "cargo" => matches!(
            sub,
            "install" | "fetch" | "update" | "publish" | "search" | "add"
        ),
        "go" => matches!(sub, "get" | "install" | "mod"),
        "apt" | "apt-get" => matches!(sub, "install" | "update" | "upgrade" | "download"),
        "docker" | "podman" => matches!(sub, "pull" | "push" | "login" | "run" | "build"),
        _ => false,
    }
}

/// A file a command writes or deletes, named by one of its words.
#[derive(Debug, Clone)]
pub enum Written {
    /// The file the word names (`sed -i s/a/b/ FILE`, `dd of=FILE`,
    /// `rm FILE`); with `tree`, what lies below it too (`rm -r DIR`).
    File { path: Arg, tree: bool },
    /// `cp`, `mv`, `install` and `ln`'s destination: the file it names, or
    /// when it is a folder (`-t DIR`, or one on disk) the files named as
    /// the sources are inside it (below them too with `tree`: `cp -r`).
    Into {
        destination: Arg,
        folder: bool,
        sources: Vec<Arg>,
        tree: bool,
    },
    /// Files the command finds named elsewhere (`patch` reads them from
    /// its patch): known only when it runs.
    Unnamed,
}

/// The value of the option `-SHORT VALUE`/`-SHORTVALUE` or `--LONG=VALUE`/
/// `--LONG VALUE` (any prefix of LONG, as getopt reads it), the last given.
fn option_value(words: &[Arg], short: char, long: &str) -> Option<Arg> {
    let mut found = None;
    let mut words_left = words.iter().skip(1).take_while(|w| w.text != "--");
    while let Some(word) = words_left.next() {
        let text = word.text.as_str();
        let attached = |value: &str| Arg {
            text: value.to_owned(),
            ..word.clone()
        };
        if let Some(option) = text.strip_prefix("--") {
            let (name, value) = match option.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (option, None),
            };
            if name.is_empty() || !long.starts_with(name) {
                continue;
            }
            found = match value {
                Some(value) => Some(attached(value)),
                None => words_left.next().cloned(),
            };
        } else if let Some(cluster) = text.strip_prefix('-') {
            let letters = cluster.find(|c: char| !c.is_ascii_alphabetic());
            let Some(at) = cluster[..letters.unwrap_or(cluster.len())].find(short) else {
                continue;
            };
            found = match &cluster[at + 1..] {
                "" => words_left.next().cloned(),
                value => Some(attached(value)),
            };
        }
    }
    found
}

/// The operands of `words` that name files, leaving out the values of the
/// options among `short` (letters) and `long` that take one (`truncate
/// -s 0 FILE`: `0` is a size).
fn file_operands(words: &[Arg], short: &str, long: &[&str]) -> Vec<Arg> {
    let mut out = Vec::new();
    let mut options_done = false;
    let mut words_left = words.iter().skip(1);
    while let Some(word) = words_left.next() {
        let text = word.text.as_str();
        if options_done || !text.starts_with('-') || text == "-" {
            out.push(word.clone());
        } else if text == "--" {
            options_done = true;
        } else if cluster_wants_value(text, short)
            || text.strip_prefix("--").is_some_and(|name| {
                !name.contains('=') && long.iter().any(|l| !name.is_empty() && l.starts_with(name))
            })
        {
            words_left.next();
        }
    }
    out
}

/// The files `words` writes or deletes: the one table both the rules on
/// writing (`edit(src/**)`) and the redirection-like `tee` are judged by.
/// `cp /etc/hostname src/a.rs`, `sed -i`, `dd of=`, `sort -o` and `rm` ran
/// under a deny on `edit(src/**)` while only `>` and `tee` were judged.
/// A delete changes the file as surely as a write: `rm`, `unlink`, `shred`
/// and `mv`'s sources count.
pub fn written_files(words: &[Arg]) -> Vec<Written> {
    let files = |paths: Vec<Arg>, tree: bool| {
        paths
            .into_iter()
            .map(|path| Written::File { path, tree })
            .collect::<Vec<_>>()
    };
    let name = program(words);
    match name {
        "tee" => files(operands(words).into_iter().cloned().collect(), false),
        "cp" | "mv" | "install" | "ln" => {
            // Options that take a value (`-S SUFFIX`, `install -m MODE`).
            let values = match name {
                "install" => "gmoStZ",
                _ => "St",
            };
            let mut named = file_operands(words, values, &["suffix", "target-directory"]);
            let tree = match name {
                "cp" => has_flag(words, "rRa", &["recursive", "archive"]),
                "mv" => true,
                _ => false,
            };
            let (destination, folder) = match option_value(words, 't', "target-directory") {
                Some(folder) => (folder, true),
                None if named.len() > 1 => (named.remove(named.len() - 1), false),
                // `ln -s /x/name` makes `./name`.
                None => (Arg::literal("."), true),
            };
            // `mv` takes its sources away: a delete where they were.
            let moved = match name {
                "mv" => files(named.clone(), true),
                _ => Vec::new(),
            };
            let into = Written::Into {
                destination,
                folder,
                sources: named,
                tree,
            };
            moved.into_iter().chain([into]).collect()
        }
        "sed" if has_flag(words, "i", &["in-place"]) => {
            // The first operand is the script, unless `-e` or `-f` gave it.
            let scripted = has_flag(words, "ef", &["expression", "file"]);
            let named = file_operands(words, "efl", &["expression", "file", "line-length"]);
            files(
                named.into_iter().skip(usize::from(!scripted)).collect(),
                false,
            )
        }
        "dd" => words
            .iter()
            .skip(1)
            .filter_map(|word| {
                let path = word.text.strip_prefix("of=")?;
                Some(Written::File {
                    path: Arg {
                        text: path.to_owned(),
                        ..word.clone()
                    },
                    tree: false,
                })
            })
            .collect(),
        "sort" => option_value(words, 'o', "output")
            .map(|path| Written::File { path, tree: false })
            .into_iter()
            .collect(),
        "truncate" => files(file_operands(words, "sr", &["size", "reference"]), false),
        "touch" => files(file_operands(words, "drt", &["date", "reference"]), false),
        "rm" | "unlink" => files(
            operands(words).into_iter().cloned().collect(),
            name == "rm" && has_flag(words, "rR", &["recursive"]),
        ),
        "shred" => files(
            file_operands(words, "ns", &["iterations", "size", "random-source"]),
            false,
        ),
        "patch" => vec![Written::Unnamed],
        _ => Vec::new(),
    }
}

/// True for `rm -r` of a target only known at run time: the sandbox would let
/// it empty the workspace, so even `auto` asks.
pub fn deletes_unknown_tree(words: &[Arg]) -> bool {
    deletes_tree_named(words, |a| !a.literal)
}

/// True for `rm -r` of a target made by an operator the policy does not
/// follow from a value it knows ([`Arg::derived`]): `rm -rf ${PWD%/}` is
/// the working directory, which a value named by a command's output
/// (`rm -rf "$tmp"`) is not known to be.
pub fn deletes_derived_tree(words: &[Arg]) -> bool {
    deletes_tree_named(words, |a| a.derived)
}

fn deletes_tree_named(words: &[Arg], named: impl Fn(&Arg) -> bool) -> bool {
    program(words) == "rm"
        && has_flag(words, "rR", &["recursive"])
        && operands(words).into_iter().any(named)
}

/// The shells whose script is judged as the command line they run.
fn is_shell(name: &str) -> bool {
    matches!(name, "sh" | "bash" | "zsh" | "dash" | "ksh" | "fish")
}

/// A shell's words after its name, without the names its `-o`/`-O` options
/// take (`-o errexit` is an option, not the script).
fn shell_words(words: &[Arg]) -> impl Iterator<Item = &Arg> {
    let mut option_name = false;
    words.iter().skip(1).filter(move |word| {
        if std::mem::take(&mut option_name) {
            return false;
        }
        option_name = matches!(word.text.as_str(), "-o" | "+o" | "-O" | "+O");
        !option_name
    })
}

/// Where a shell or `source` reads the script it runs.
pub enum ScriptFrom<'a> {
    /// Standard input: `sh`, `bash -s`, `bash -x -`, and a script named
    /// `/dev/stdin` (or `/dev/fd/0`, `/proc/self/fd/0`), which is the same.
    Stdin,
    /// The file this word names (`bash x.sh`, `. <(echo ...)`).
    File(&'a Arg),
}

/// Where the command `words` reads the script it runs, when it is a shell
/// without `-c` (whose script [`nested_script`] gives) or `.`/`source`.
/// `. /dev/stdin <<< TEXT` and `bash /dev/stdin` ran what a deny rule
/// and the always-deny list would have refused as `bash <<< TEXT`.
pub fn script_source(words: &[Arg]) -> Option<ScriptFrom<'_>> {
    fn file(word: &Arg) -> ScriptFrom<'_> {
        match is_stdin_path(&word.text) {
            true => ScriptFrom::Stdin,
            false => ScriptFrom::File(word),
        }
    }
    if matches!(program(words), "." | "source") {
        let script = words.iter().skip(1).find(|word| word.text != "--")?;
        return Some(file(script));
    }
    if !is_shell(program(words)) {
        return None;
    }
    let mut args = shell_words(words);
    while let Some(word) = args.next() {
        let t = word.text.as_str();
        if t == "-" {
            return Some(ScriptFrom::Stdin);
        }
        if t == "--" {
            return Some(args.next().map_or(ScriptFrom::Stdin, file));
        }
        if t.starts_with("--") {
            continue;
        }
        if t.starts_with('-') || t.starts_with('+') {
            if t.contains('c') {
                return None;
            }
            if t.contains('s') {
                return Some(ScriptFrom::Stdin);
            }
            continue;
        }
        return Some(file(word));
    }
    Some(ScriptFrom::Stdin)
}

/// The paths that open the reading process's own standard input, or
/// another descriptor of its own: what a here-string or here-document
/// gives it (`bash /dev/fd/3 3<<< TEXT` runs `TEXT`; the walk keeps a
/// part's here-texts whatever their descriptor, so all are judged).
pub fn is_stdin_path(text: &str) -> bool {
    let path = super::paths::normalize(std::path::Path::new(text));
    path == std::path::Path::new("/dev/stdin")
        || ["/dev/fd", "/proc/self/fd", "/proc/thread-self/fd"]
            .iter()
            .any(|folder| {
                path.parent() == Some(std::path::Path::new(folder))
                    && path
                        .file_name()
                        .and_then(|name| name.to_str())
                        .is_some_and(|name| name.bytes().all(|b| b.is_ascii_digit()))
            })
}

/// The text a literal `echo` or `printf` prints, when it is all literal:
/// what a shell after it in a pipeline reads as its script. Each reading
/// bash's `echo` may have (escapes taken or not). `None` for any other
/// command, or words known only at run time.
pub fn printed_text(words: &[Arg]) -> Option<Vec<String>> {
    if words.iter().any(|word| !word.literal) {
        return None;
    }
    match program(words) {
        "echo" => {
            let args: Vec<&str> = words
                .iter()
                .skip(1)
                .map(|word| word.text.as_str())
                .skip_while(|t| {
                    t.len() > 1
                        && t.starts_with('-')
                        && t[1..].chars().all(|c| matches!(c, 'n' | 'e' | 'E'))
                })
                .collect();
            let text = args.join(" ");
            let escaped = unescape(&text);
            Some(if escaped == text {
                vec![text]
            } else {
                vec![text, escaped]
            })
        }
        "printf" => {
            let mut args = words.iter().skip(1).map(|word| word.text.as_str());
            let mut format = args.next()?;
            if format == "--" {
                format = args.next()?;
            }
            if format.starts_with("-v") {
                return Some(Vec::new());
            }
            let args: Vec<&str> = args.collect();
            Some(vec![printf(&unescape(format), &args)])
        }
        _ => None,
    }
}

/// The escapes printf and `echo -e` read: `\n`, `\t` and the other
/// letters, `\xHH`, octal `\NNN` and `\0NNN`, `\\`; any other `\` stays.
/// `printf 'git\x20push' | sh` ran `git push` judged as `git\x20push`, and
/// `printf '%s\0' ~ | xargs -0` gives xargs NULs to split at.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = match chars.peek().copied() {
            // `\x` and `\0` with no digit after them are a NUL.
            Some('x') => {
                chars.next();
                digits(&mut chars, 16, 2, Some(0)).and_then(char::from_u32)
            }
            Some('0') => {
                chars.next();
                digits(&mut chars, 8, 3, Some(0)).and_then(char::from_u32)
            }
            Some('1'..='7') => digits(&mut chars, 8, 3, None).and_then(char::from_u32),
            Some(letter) => {
                let named = control_escape(letter).or((letter == '\\').then_some('\\'));
                if named.is_some() {
                    chars.next();
                }
                named
            }
            None => None,
        };
        match escaped {
            Some(escaped) => out.push(escaped),
            None => out.push('\\'),
        }
    }
    out
}

/// What `printf FORMAT ARGS` prints, every directive taken as `%s`; the
/// format is used again while arguments remain, as printf does.
fn printf(format: &str, args: &[&str]) -> String {
    let mut out = String::new();
    let mut next = 0;
    loop {
        let mut used = false;
        let mut chars = format.chars().peekable();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            if chars.peek() == Some(&'%') {
                chars.next();
                out.push('%');
                continue;
            }
            // Flags, width and precision, then the conversion letter.
            while chars
                .next_if(|c| !c.is_ascii_alphabetic() || matches!(c, 'l' | 'h'))
                .is_some()
            {}
            chars.next();
            used = true;
            if let Some(arg) = args.get(next) {
                out.push_str(arg);
            }
            next += 1;
        }
        if !used || next >= args.len() {
            return out;
        }
    }
}

/// What a git alias defined on the command line (`git -c alias.p=push p`)
/// runs in place of the subcommand.
pub enum GitAlias {
    /// Another git command: its words.
    Git(Vec<Arg>),
    /// `!...`: a shell script.
    Shell(String),
    /// An alias whose text is known only at run time.
    Unknown(String),
}

/// The alias `words` (a git command) define with `-c alias.NAME=VALUE`
/// and run as their subcommand; `None` when they run none.
pub fn git_alias(words: &[Arg]) -> Option<GitAlias> {
    if program(words) != "git" {
        return None;
    }
    let (sub, rest) = git_subcommand(words);
    let mut at = 1;
    let mut found = None;
    while let Some(word) = words.get(at) {
        let t = word.text.as_str();
        let value = match t {
            "-c" => words.get(at + 1),
            _ if t.starts_with("--config-env") => {
                let line = super::shell::join(words);
                return Some(GitAlias::Unknown(format!(
                    "`{line}` sets configuration from the environment, which may define an alias for its subcommand"
                )));
            }
            _ if !t.starts_with('-') => break,
            _ => None,
        };
        at += if t == "-c" { 2 } else { 1 };
        let Some(value) = value else { continue };
        let Some((key, text)) = value.text.split_once('=') else {
            continue;
        };
        let named = key
            .strip_prefix("alias.")
            .or_else(|| key.strip_prefix("ALIAS."))
            .is_some_and(|name| name.eq_ignore_ascii_case(sub));
        if named {
            found = Some((value.literal, text.to_owned()));
        }
        if !value.literal && key.to_ascii_lowercase().starts_with("alias") {
            found = Some((false, text.to_owned()));
        }
    }
    let (literal, text) = found?;
    let line = super::shell::join(words);
    if !literal {
        return Some(GitAlias::Unknown(format!(
            "`{line}` defines a git alias known only at run time"
        )));
    }
    let args = super::shell::join(rest);
    Some(match text.strip_prefix('!') {
        Some(script) => GitAlias::Shell(format!("{script} {args}")),
        None => {
            let mut expanded = vec![words[0].clone()];
            expanded.extend(text.split_whitespace().map(Arg::literal));
            expanded.extend(rest.iter().cloned());
            GitAlias::Git(expanded)
        }
    })
}
