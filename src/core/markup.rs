//! Step 0 of the text pipeline for markup (`{"markup": "html"}`): the text a reader of an HTML
//! page sees, so that two copies of a page are compared by their words, not their tags.
//!
//! Crawled pages share most of their markup (the site's template, attribute soup, inline
//! scripts and styles); fingerprinted raw, near-copies are those of the template. The page goes
//! through html5gum, a WHATWG-conformant tokenizer that accepts any tag soup as browsers do, and
//! keeps only character data: tags, comments, doctypes and the contents of `script`, `style`
//! and the other raw-text elements go; character references (`&amp;`, `&#20013;`) are decoded
//! by the tokenizer; block-level elements and `br` become line breaks, so that the words of two
//! cells or paragraphs never run together, while inline elements (`a`, `b`, `span`) join their
//! text as a browser renders it.
//!
//! No tree is built: memory is the output text, at most the input's size, and the caller's
//! `check` runs every few thousand tokens so that a huge page can be cancelled.

use std::convert::Infallible;

use html5gum::emitters::callback::{CallbackEmitter, CallbackEvent};
use html5gum::{Span, Tokenizer};

/// Elements whose contents are never shown as text: scripts, styles and the other raw-text
/// elements, templates (inert until a script clones them), and `noscript` (shown only without
/// scripts; on crawled pages it is a "please enable JavaScript" banner shared by every page).
const HIDDEN: [&[u8]; 8] = [
    b"script",
    b"style",
    b"noscript",
    b"template",
    b"iframe",
    b"noembed",
    b"noframes",
    b"xmp",
];

/// Elements that start a new line or block when rendered: their text never joins a neighbour's.
const BLOCKS: [&[u8]; 46] = [
    b"address",
    b"article",
    b"aside",
    b"blockquote",
    b"body",
    b"br",
    b"caption",
    b"center",
    b"dd",
    b"details",
    b"dialog",
    b"dir",
    b"div",
    b"dl",
    b"dt",
    b"fieldset",
    b"figcaption",
    b"figure",
    b"footer",
    b"form",
    b"h1",
    b"h2",
    b"h3",
    b"h4",
    b"h5",
    b"h6",
    b"head",
    b"header",
    b"hgroup",
    b"hr",
    b"html",
    b"legend",
    b"li",
    b"main",
    b"menu",
    b"nav",
    b"ol",
    b"option",
    b"p",
    b"pre",
    b"section",
    b"summary",
    b"table",
    b"td",
    b"th",
    b"tr",
];

/// How many tokenizer events pass between two calls of `check`.
const CHECK_EVERY: u32 = 4096;

/// The visible text of the HTML document `html`: character data outside hidden elements,
/// entities decoded, a line break where a block-level element starts or ends. Never fails:
/// broken markup is read as a browser reads it.
pub fn visible_text(html: &str, check: &mut dyn FnMut()) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    // Depth inside hidden elements (nested ones, or a stray end tag, are counted).
    let mut hidden = 0u32;
    let mut events = 0u32;
    let mut emitter = CallbackEmitter::new(
        |event: CallbackEvent<'_>, _: Span<()>| -> Option<Infallible> {
            events += 1;
            if events % CHECK_EVERY == 0 {
                check();
            }
            match event {
                CallbackEvent::OpenStartTag { name } => {
                    if HIDDEN.contains(&name) {
                        hidden += 1;
                    } else if BLOCKS.contains(&name) {
                        line_break(&mut out);
                    }
                }
                CallbackEvent::EndTag { name } => {
                    if HIDDEN.contains(&name) {
                        hidden = hidden.saturating_sub(1);
                    } else if BLOCKS.contains(&name) {
                        line_break(&mut out);
                    }
                }
                CallbackEvent::String { value } if hidden == 0 => {
                    out.push_str(&String::from_utf8_lossy(value))
                }
                _ => {}
            }
            None
        },
    );
    // After `<script>`, `<style>`, `<title>` and the like, the tokenizer reads raw text up to
    // the matching end tag, as a browser's tree builder makes it (a `<p>` in a script is text).
    emitter.naively_switch_states(true);
    // Reading a &str cannot fail.
    let _ = Tokenizer::new_with_emitter(html, emitter).finish();
    out.truncate(out.trim_end_matches('\n').len());
    out
}

/// Ends the current line, once: blocks in a row make one break, and none comes first.
fn line_break(out: &mut String) {
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(html: &str) -> String {
        visible_text(html, &mut || {})
    }

    #[test]
    fn tags_comments_scripts_and_styles_go_and_entities_are_decoded() {
        let page = r#"<!DOCTYPE html><html><head><title>Tea &amp; cake</title>
            <style>p { color: red }</style><script>var a = "<p>not text</p>";</script></head>
            <body><!-- a comment --><p class="x">Fish&nbsp;&lt;3 &#20013;&#x6587;</p><noscript>Enable JS</noscript></body></html>"#;
        let got = text(page);
        assert!(got.contains("Tea & cake"), "{got:?}");
        assert!(got.contains("Fish\u{a0}<3 中文"), "{got:?}");
        for gone in [
            "color",
            "var a",
            "not text",
            "a comment",
            "Enable JS",
            "class",
            "DOCTYPE",
        ] {
            assert!(!got.contains(gone), "{gone} in {got:?}");
        }
    }

    #[test]
    fn blocks_break_and_inline_elements_join() {
        assert_eq!(
            text("<td>one</td><td>two</td>")
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["one", "two"]
        );
        assert_eq!(
            text("<p>in<b>line</b></p><p>next</p>")
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["inline", "next"]
        );
        assert_eq!(
            text("a<br>b").split_whitespace().collect::<Vec<_>>(),
            ["a", "b"]
        );
    }

    #[test]
    fn broken_markup_is_read_as_a_browser_reads_it() {
        assert_eq!(text("plain text, no tags"), "plain text, no tags");
        assert_eq!(
            text("<p>unclosed <b>bold <i>and more"),
            "unclosed bold and more"
        );
        assert_eq!(text("a < b and c > d"), "a < b and c > d");
        assert_eq!(text("<script>never closed <p>still script"), "");
        // A browser ignores the slash on a non-void element: the rest is script.
        assert_eq!(text("<script/>after"), "");
        assert_eq!(text("</script>stray end"), "stray end");
        assert_eq!(text("<div attr='unterminated>text"), "");
        assert_eq!(
            text("<div><p>one</p></div>\n<div><p>two</p></div>"),
            "one\n\ntwo"
        );
        assert_eq!(text(""), "");
    }

    #[test]
    fn long_pages_call_check() {
        let page = "<p>x</p>".repeat(10_000);
        let mut calls = 0;
        let got = visible_text(&page, &mut || calls += 1);
        assert!(calls >= 4, "{calls}");
        assert_eq!(got.matches('x').count(), 10_000);
    }
}
