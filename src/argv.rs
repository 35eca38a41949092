//! The shape that curl's and wget's command lines share, getopt's: the
//! words after the program up to `--` (after which every word is a URL),
//! long options (`--name`, each program reading the name its own way), and
//! short options alone or in a cluster (`-fsS`), where one that takes a
//! value takes the rest of its word (`-XPOST`) or else the next word,
//! whatever it looks like (in `-H -f`, `-f` is a header). Words that are
//! no option (the URLs, a lone `-`) are left out. Pure: words in, options
//! out.

use std::ffi::OsString;

/// One option, as the command line gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A long option: what follows its dashes, and the next word when the
    /// option takes it (`None` also when the line ends first).
    Long(String, Option<String>),
    /// A short option: its letter, and its value when it takes one.
    Short(char, Option<String>),
}

/// The options of a command line (`args`, the program first): a long one
/// takes the next word when `long_takes` says so of what follows its
/// dashes, a short one a value when `short_takes` says so of its letter.
pub fn tokens(
    args: &[OsString],
    long_takes: impl Fn(&str) -> bool,
    short_takes: impl Fn(char) -> bool,
) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut words = args.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(word) = words.next() {
        if word == "--" {
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            let value = if long_takes(long) {
                words.next().map(String::from)
            } else {
                None
            };
            tokens.push(Token::Long(long.to_owned(), value));
            continue;
        }
        let Some(letters) = word.strip_prefix('-').filter(|l| !l.is_empty()) else {
            continue;
        };
        for (i, letter) in letters.char_indices() {
            if short_takes(letter) {
                let rest = &letters[i + letter.len_utf8()..];
                let value = if rest.is_empty() {
                    words.next().map(String::from)
                } else {
                    Some(rest.to_owned())
                };
                tokens.push(Token::Short(letter, value));
                break;
            }
            tokens.push(Token::Short(letter, None));
        }
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_ends_a_cluster_or_takes_the_next_word_whatever_it_is() {
        let args: Vec<OsString> = [
            "prog", "-abXrest", "-X", "-a", "--long", "--v", "-v", "url", "-", "--", "-a",
        ]
        .map(OsString::from)
        .to_vec();
        let tokens = tokens(&args, |l| l == "v", |c| c == 'X');
        assert_eq!(
            tokens,
            [
                Token::Short('a', None),
                Token::Short('b', None),
                Token::Short('X', Some("rest".into())),
                Token::Short('X', Some("-a".into())),
                Token::Long("long".into(), None),
                Token::Long("v".into(), Some("-v".into())),
            ]
        );
    }
}
