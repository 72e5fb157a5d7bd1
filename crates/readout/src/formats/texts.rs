//! Texts to score, read from the formats people keep them in: JSON Lines (each line a string or
//! an object with `text` and an optional `id`), CSV (a header with a `text` column and an
//! optional `id` column) and plain lines (one text a line, as a shell user pipes them). Here
//! rather than in a shell so that every shell (the CLI's files and standard input, the MCP tool's
//! and the server's JSON) reads a text one way and names the line of a bad one the same way.
//!
//! When no format is given, a file's name chooses it (`*.csv`, `*.jsonl`, `*.json`); any other
//! name, and standard input, is chosen by its content: JSON Lines when the first non-empty line is
//! a JSON object or string (or opens with `{`, so that a broken object is refused by its line
//! rather than scored as text), plain lines otherwise.

use crate::error::{Error, Result};
use std::io::{BufRead, Read};
use std::path::Path;

/// A text to score, with an optional id carried into its result.
#[derive(Debug, Clone)]
pub struct Text {
    pub id: Option<String>,
    pub text: String,
}

/// How a stream of texts is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextsFormat {
    /// One JSON value a line: a string, or an object with `text` (or `state`) and an optional `id`.
    JsonLines,
    /// Comma-separated values with a header: a `text` (or `state`) column, an optional `id`
    /// column; other columns are ignored.
    Csv,
    /// Plain text, one text a line (a trailing `\r` dropped); blank lines are skipped.
    Lines,
}

option_names!(TextsFormat, "texts format", "jsonl, csv or lines", {
    JsonLines => "jsonl",
    Csv => "csv",
    Lines => "lines",
});

impl TextsFormat {
    /// The format a file's name says, if it says one: `.csv` is CSV, `.jsonl` and `.json` JSON
    /// Lines (any case). Other names, and standard input, say none: see [`TextsFormat::sniff`].
    pub fn of_name(path: &Path) -> Option<TextsFormat> {
        let ext = path.extension().and_then(|e| e.to_str())?;
        if ext.eq_ignore_ascii_case("csv") {
            Some(TextsFormat::Csv)
        } else if ext.eq_ignore_ascii_case("jsonl") || ext.eq_ignore_ascii_case("json") {
            Some(TextsFormat::JsonLines)
        } else {
            None
        }
    }

    /// The format `body`'s first non-empty line says: JSON Lines when it is a JSON object or
    /// string, or opens with `{` (an object with a mistake, for the JSON Lines reader to name);
    /// plain lines otherwise (and for an empty body).
    pub fn sniff(body: &[u8]) -> TextsFormat {
        let body = body.strip_prefix("\u{feff}".as_bytes()).unwrap_or(body);
        let first = body.split(|&b| b == b'\n').map(|l| l.trim_ascii()).find(|l| !l.is_empty());
        let Some(first) = first else { return TextsFormat::Lines };
        let json = first.starts_with(b"{") || matches!(serde_json::from_slice(first), Ok(serde_json::Value::String(_)));
        if json {
            TextsFormat::JsonLines
        } else {
            TextsFormat::Lines
        }
    }
}

/// What settled the format texts were read in, for a shell to tell its user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChosenBy {
    /// The caller gave it (`--texts-format`).
    Given,
    /// The file's name ([`TextsFormat::of_name`]).
    Name,
    /// The content's first non-empty line ([`TextsFormat::sniff`]).
    Content,
}

/// Texts read, with the format they were read in and what chose it.
#[derive(Debug, Clone)]
pub struct TextsRead {
    pub texts: Vec<Text>,
    pub format: TextsFormat,
    pub chosen_by: ChosenBy,
}

/// Read every text from `reader` in `format`; `source` only names where they came from in errors
/// (a path, or `-` for standard input).
pub fn read_texts(reader: impl Read, source: &Path, format: TextsFormat) -> Result<Vec<Text>> {
    match format {
        TextsFormat::JsonLines => read_json_lines(reader, source),
        TextsFormat::Csv => read_csv(reader, source),
        TextsFormat::Lines => read_lines(reader, source),
    }
}

/// Read every text from `reader` in `given` when it is given, else in the format `source`'s name
/// says, else in the one its content says. `reader` is read once (standard input cannot be read
/// twice): to choose by content the whole input is read first, then parsed from memory.
pub fn read_texts_choosing(mut reader: impl Read, source: &Path, given: Option<TextsFormat>) -> Result<TextsRead> {
    let (format, chosen_by) = match given {
        Some(f) => (f, ChosenBy::Given),
        None => match TextsFormat::of_name(source) {
            Some(f) => (f, ChosenBy::Name),
            None => {
                let mut body = Vec::new();
                reader.read_to_end(&mut body).map_err(|e| Error::io(source, e))?;
                let format = TextsFormat::sniff(&body);
                let texts = read_texts(body.as_slice(), source, format)?;
                return Ok(TextsRead { texts, format, chosen_by: ChosenBy::Content });
            }
        },
    };
    Ok(TextsRead { texts: read_texts(reader, source, format)?, format, chosen_by })
}

/// A text given as JSON: a string, or an object with `text` (or `state`) and an optional `id`
/// (a non-string id is kept as its JSON). The error says what is wrong, for the caller to place.
pub fn text_from_json(value: serde_json::Value) -> std::result::Result<Text, String> {
    match value {
        serde_json::Value::String(s) => Ok(Text { id: None, text: s }),
        serde_json::Value::Object(o) => {
            let text = o.get("text").or_else(|| o.get("state")).and_then(|t| t.as_str());
            let Some(text) = text else {
                return Err("missing: each object needs a `text` (or `state`) string".into());
            };
            let id = o.get("id").map(|v| v.as_str().map(String::from).unwrap_or_else(|| v.to_string()));
            Ok(Text { id, text: text.to_string() })
        }
        _ => Err("each text must be a JSON string or an object with `text`".into()),
    }
}

fn read_json_lines(reader: impl Read, source: &Path) -> Result<Vec<Text>> {
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(reader).lines().enumerate() {
        let bad = |field: &str, reason: String| Error::BadInput {
            path: source.to_path_buf(),
            line: i + 1,
            field: field.into(),
            reason,
        };
        let line = line.map_err(|e| bad("(utf-8)", format!("not valid UTF-8 text ({e}); save the file as UTF-8")))?;
        let line = if i == 0 { line.strip_prefix('\u{feff}').unwrap_or(&line).to_string() } else { line };
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&line).map_err(|e| bad("text", format!("not JSON: {e}")))?;
        out.push(text_from_json(v).map_err(|r| bad("text", r))?);
    }
    Ok(out)
}

fn read_lines(reader: impl Read, source: &Path) -> Result<Vec<Text>> {
    let mut out = Vec::new();
    for (i, line) in std::io::BufReader::new(reader).lines().enumerate() {
        let line = line.map_err(|e| Error::BadInput {
            path: source.to_path_buf(),
            line: i + 1,
            field: "(utf-8)".into(),
            reason: format!("not valid UTF-8 text ({e}); save the file as UTF-8"),
        })?;
        let line = if i == 0 { line.strip_prefix('\u{feff}').unwrap_or(&line) } else { &line };
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        out.push(Text { id: None, text: line.to_string() });
    }
    Ok(out)
}

fn read_csv(mut reader: impl Read, source: &Path) -> Result<Vec<Text>> {
    // Read whole: a quote left open makes the reader take the rest of the input as one field,
    // which only the raw bytes of the last record can tell.
    let mut raw = Vec::new();
    reader.read_to_end(&mut raw).map_err(|e| Error::io(source, e))?;
    let bad = |line: u64, field: &str, reason: String| Error::BadInput {
        path: source.to_path_buf(),
        line: line as usize,
        field: field.into(),
        reason,
    };
    let from_csv = |e: csv::Error| {
        let line = e.position().map_or(1, |p| p.line());
        let reason = match e.kind() {
            csv::ErrorKind::Utf8 { .. } => "not valid UTF-8 text; save the file as UTF-8".to_string(),
            csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
                format!("has {len} fields where the header has {expected_len}; quote a text that holds a comma")
            }
            _ => format!("not CSV: {e}"),
        };
        bad(line, "(csv)", reason)
    };
    let mut csv = csv::ReaderBuilder::new().has_headers(true).from_reader(raw.as_slice());
    let header = csv.headers().map_err(from_csv)?.clone();
    let name = |h: &str| h.trim_start_matches('\u{feff}').trim().to_ascii_lowercase();
    let column = |want: &str| header.iter().position(|h| name(h) == want);
    let Some(text_col) = column("text").or_else(|| column("state")) else {
        let found = header.iter().map(|h| format!("`{}`", name(h))).collect::<Vec<_>>().join(", ");
        return Err(bad(
            1,
            "(header)",
            format!("has no `text` column (found {found}); the first line names the columns: text and optionally id"),
        ));
    };
    let id_col = column("id");
    let mut out = Vec::new();
    let mut last_start: Option<(u64, u64)> = None;
    for record in csv.records() {
        let record = record.map_err(from_csv)?;
        let line = record.position().map_or(0, |p| p.line());
        last_start = record.position().map(|p| (p.line(), p.byte()));
        let Some(text) = record.get(text_col) else {
            return Err(bad(line, "text", "missing".into()));
        };
        let id = id_col.and_then(|c| record.get(c)).filter(|s| !s.is_empty()).map(String::from);
        out.push(Text { id, text: text.to_string() });
    }
    if let Some((line, byte)) = last_start {
        if ends_in_open_quote(raw.get(byte as usize..).unwrap_or_default()) {
            return Err(bad(
                line,
                "(csv)",
                "opens a quoted field that is never closed, so the rest of the file would be one text; add the closing `\"` (a quote inside a quoted text is written `\"\"`)".into(),
            ));
        }
    }
    Ok(out)
}

/// Whether `raw` (a record's bytes to the end of the input) ends inside a quoted field, as CSV
/// quotes them: a field that starts with `"` runs to the next `"` not doubled.
fn ends_in_open_quote(raw: &[u8]) -> bool {
    let (mut quoted, mut field_start, mut i) = (false, true, 0);
    while i < raw.len() {
        let b = raw[i];
        if quoted {
            if b == b'"' {
                if raw.get(i + 1) == Some(&b'"') {
                    i += 1;
                } else {
                    quoted = false;
                }
            }
        } else if matches!(b, b',' | b'\n' | b'\r') {
            field_start = true;
            i += 1;
            continue;
        } else if b == b'"' && field_start {
            quoted = true;
        }
        field_start = false;
        i += 1;
    }
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(body: &str, format: TextsFormat) -> Result<Vec<Text>> {
        read_texts(body.as_bytes(), Path::new("in"), format)
    }

    fn line_of(e: Error) -> (usize, String) {
        match e {
            Error::BadInput { line, field, .. } => (line, field),
            other => panic!("{other}"),
        }
    }

    #[test]
    fn an_unclosed_quote_is_refused_where_it_opens() {
        let (line, field) = line_of(read("text\nfirst\n\"hello, world\nsecond\n", TextsFormat::Csv).unwrap_err());
        assert_eq!((line, field.as_str()), (3, "(csv)"));
        // Closed quotes, doubled quotes and line breaks inside them are text.
        let t = read("id,text\n1,\"a \"\"b\"\"\nc\"\n2,plain \"x\n", TextsFormat::Csv).unwrap();
        assert_eq!(t.iter().map(|t| t.text.as_str()).collect::<Vec<_>>(), ["a \"b\"\nc", "plain \"x"]);
        assert!(!ends_in_open_quote(b"a,\"b\"\"\",c\n"));
        assert!(ends_in_open_quote(b"a,\"b\"\",c\n"));
    }

    #[test]
    fn json_lines_take_strings_and_objects_and_skip_blank_lines() {
        let t =
            read("\"a\"\n\n{\"id\": 7, \"text\": \"b\"}\n{\"state\": \"c\", \"id\": \"x\"}\n", TextsFormat::JsonLines)
                .unwrap();
        let got: Vec<(Option<&str>, &str)> = t.iter().map(|t| (t.id.as_deref(), t.text.as_str())).collect();
        assert_eq!(got, [(None, "a"), (Some("7"), "b"), (Some("x"), "c")]);
    }

    #[test]
    fn a_bad_json_line_is_named() {
        let e = read("\"a\"\n{\"id\": 1}\n", TextsFormat::JsonLines).unwrap_err();
        assert_eq!(line_of(e), (2, "text".into()));
        let e = read("\"a\"\n\"b\"\n[1]\n", TextsFormat::JsonLines).unwrap_err();
        assert_eq!(line_of(e), (3, "text".into()));
    }

    #[test]
    fn csv_reads_text_and_id_columns_in_any_order_with_quotes() {
        let body = "\u{feff}ID,extra,Text\nt1,x,\"Hello, world\"\n,y,\"two\nlines\"\nt3,z,plain\n";
        let t = read(body, TextsFormat::Csv).unwrap();
        let got: Vec<(Option<&str>, &str)> = t.iter().map(|t| (t.id.as_deref(), t.text.as_str())).collect();
        assert_eq!(got, [(Some("t1"), "Hello, world"), (None, "two\nlines"), (Some("t3"), "plain")]);
    }

    #[test]
    fn csv_without_a_text_column_or_with_a_short_row_is_refused_at_its_line() {
        let e = read("id,body\n1,hi\n", TextsFormat::Csv).unwrap_err();
        assert_eq!(line_of(e), (1, "(header)".into()));
        // The record on line 3 has one field too many (an unquoted comma).
        let e = read("id,text\n1,fine\n2,not, fine\n", TextsFormat::Csv).unwrap_err();
        assert_eq!(line_of(e), (3, "(csv)".into()));
        // Line numbers count the lines a quoted text spans.
        let e = read("text\n\"a\nb\"\n\"c\",d\n", TextsFormat::Csv).unwrap_err();
        assert_eq!(line_of(e), (4, "(csv)".into()));
    }

    #[test]
    fn format_from_the_file_name() {
        assert_eq!(TextsFormat::of_name(Path::new("a/b.CSV")), Some(TextsFormat::Csv));
        assert_eq!(TextsFormat::of_name(Path::new("a/b.jsonl")), Some(TextsFormat::JsonLines));
        assert_eq!(TextsFormat::of_name(Path::new("a/b.Json")), Some(TextsFormat::JsonLines));
        for unnamed in ["-", "(standard input)", "a/notes.txt", "a/texts"] {
            assert_eq!(TextsFormat::of_name(Path::new(unnamed)), None, "{unnamed}");
        }
        assert_eq!("csv".parse::<TextsFormat>(), Ok(TextsFormat::Csv));
        assert_eq!("lines".parse::<TextsFormat>(), Ok(TextsFormat::Lines));
        assert_eq!(TextsFormat::Lines.as_str(), "lines");
        assert!("tsv".parse::<TextsFormat>().unwrap_err().contains("jsonl, csv or lines"));
    }

    #[test]
    fn lines_are_one_text_each_without_ids_blank_ones_skipped() {
        let body = "\u{feff}I was charged twice.\r\n\n   \nThe app crashes, \"again\".\r\n{not json\nlast\r";
        let t = read(body, TextsFormat::Lines).unwrap();
        let got: Vec<(Option<&str>, &str)> = t.iter().map(|t| (t.id.as_deref(), t.text.as_str())).collect();
        assert_eq!(
            got,
            [
                (None, "I was charged twice."),
                (None, "The app crashes, \"again\"."),
                (None, "{not json"),
                (None, "last")
            ]
        );
        assert!(read("", TextsFormat::Lines).unwrap().is_empty());
        // A line that is not UTF-8 is named.
        let e = read_texts(&b"fine\n\xff\xfe\n"[..], Path::new("in"), TextsFormat::Lines).unwrap_err();
        assert_eq!(line_of(e), (2, "(utf-8)".into()));
    }

    #[test]
    fn the_first_non_empty_line_chooses_between_json_lines_and_lines() {
        let sniff = |body: &str| TextsFormat::sniff(body.as_bytes());
        assert_eq!(sniff("I was charged twice.\nThe app crashes.\n"), TextsFormat::Lines);
        assert_eq!(sniff("\n  \n{\"text\": \"a\"}\nplain\n"), TextsFormat::JsonLines);
        assert_eq!(sniff("\u{feff}\"a\"\r\n\"b\"\r\n"), TextsFormat::JsonLines);
        // An object with a mistake is JSON Lines, for its reader to refuse by line.
        assert_eq!(sniff("{\"text\": \"a\",}\n"), TextsFormat::JsonLines);
        // JSON that cannot be a text, and text that merely quotes, are lines.
        for lines in ["42\n", "[1, 2]\n", "\"Hi,\" she said.\n", "true\n", ""] {
            assert_eq!(sniff(lines), TextsFormat::Lines, "{lines:?}");
        }
    }

    #[test]
    fn the_format_is_given_or_named_or_sniffed_from_one_read() {
        let choose = |body: &str, name: &str, given| read_texts_choosing(body.as_bytes(), Path::new(name), given);
        let plain = "I was charged twice.\nThe app crashes when I open it.\n";
        let r = choose(plain, "(standard input)", None).unwrap();
        assert_eq!((r.format, r.chosen_by, r.texts.len()), (TextsFormat::Lines, ChosenBy::Content, 2));
        assert_eq!(r.texts[1].text, "The app crashes when I open it.");
        let r = choose("{\"id\": \"t1\", \"text\": \"a\"}\n", "notes.txt", None).unwrap();
        assert_eq!(
            (r.format, r.chosen_by, r.texts[0].id.as_deref()),
            (TextsFormat::JsonLines, ChosenBy::Content, Some("t1"))
        );
        // A name or a given format is kept, and JSON Lines still refuses plain text.
        for (name, given) in [("t.jsonl", None), ("-", Some(TextsFormat::JsonLines))] {
            let (line, field) = line_of(choose(plain, name, given).unwrap_err());
            assert_eq!((line, field.as_str()), (1, "text"), "{name}");
        }
        let r = choose("text\nhello\n", "t.csv", None).unwrap();
        assert_eq!((r.format, r.chosen_by, r.texts.len()), (TextsFormat::Csv, ChosenBy::Name, 1));
        let r = choose("{\"text\": \"a\"}\n", "-", Some(TextsFormat::Lines)).unwrap();
        assert_eq!((r.chosen_by, r.texts[0].text.as_str()), (ChosenBy::Given, "{\"text\": \"a\"}"));
    }
}
