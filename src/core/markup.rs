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
    let mut hidden = Hidden::default();
    read_events(html, check, |event| {
        match event {
            CallbackEvent::OpenStartTag { name } | CallbackEvent::EndTag { name } => {
                let opens = matches!(event, CallbackEvent::OpenStartTag { .. });
                if hidden.tag(name, opens) == Tag::Block {
                    line_break(&mut out);
                }
            }
            CallbackEvent::String { value } if hidden.visible() => {
                out.push_str(&String::from_utf8_lossy(value))
            }
            _ => {}
        }
    });
    out.truncate(out.trim_end_matches('\n').len());
    out
}

/// What a start or end tag is to the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    /// A hidden element's (`HIDDEN`): its text is not shown.
    Hidden,
    /// A block-level element's (`BLOCKS`): a line break.
    Block,
    /// Any other: nothing to the text.
    Inline,
}

/// The depth inside hidden elements, which both readers of a page keep the same way (nested
/// ones, or a stray end tag, are counted).
#[derive(Default)]
struct Hidden(u32);

impl Hidden {
    /// Counts the start tag (`opens`) or end tag of `name`, and says what it is.
    fn tag(&mut self, name: &[u8], opens: bool) -> Tag {
        if HIDDEN.contains(&name) {
            self.0 = if opens { self.0 + 1 } else { self.0.saturating_sub(1) };
            Tag::Hidden
        } else if BLOCKS.contains(&name) {
            Tag::Block
        } else {
            Tag::Inline
        }
    }

    /// Whether text here is shown.
    fn visible(&self) -> bool {
        self.0 == 0
    }
}

/// Runs the tokenizer over `html`, handing each event to `on_event`, with `check` every
/// `CHECK_EVERY` events. After `<script>`, `<style>`, `<title>` and the like it reads raw text
/// up to the matching end tag, as a browser's tree builder makes it (a `<p>` in a script is
/// text).
fn read_events(html: &str, check: &mut dyn FnMut(), mut on_event: impl FnMut(CallbackEvent<'_>)) {
    let mut events = 0u32;
    let mut emitter = CallbackEmitter::new(|event: CallbackEvent<'_>, _: Span<()>| -> Option<Infallible> {
        events += 1;
        if events.is_multiple_of(CHECK_EVERY) {
            check();
        }
        on_event(event);
        None
    });
    emitter.naively_switch_states(true);
    // Reading a &str cannot fail.
    let _ = Tokenizer::new_with_emitter(html, emitter).finish();
}

/// Elements that mark a page's main content (with `role="main"` on any element).
const MAIN: [&[u8]; 2] = [b"main", b"article"];

/// Elements that hold a site's frame rather than a page's content (with the ARIA roles below);
/// the head and its title too, which carry the site's name. Inside the main content only `nav`
/// and `aside` count: an article's own `header` holds its title.
const CHROME: [&[u8]; 6] = [b"nav", b"aside", b"header", b"footer", b"head", b"title"];
const CHROME_IN_MAIN: [&[u8]; 2] = [b"nav", b"aside"];
const CHROME_ROLES: [&[u8]; 5] = [b"navigation", b"banner", b"contentinfo", b"complementary", b"search"];

/// Starts of class or id words that name a site's frame in templates without HTML5 elements
/// (`navheader`, `sidebar-left`, `site-footer` ...): matched at the start of each word, words
/// split at spaces, `-` and `_`.
const CHROME_WORDS: [&[u8]; 10] = [
    b"nav", b"menu", b"sidebar", b"footer", b"header", b"breadcrumb", b"related", b"masthead", b"banner", b"cookie",
];

/// What a start tag opens, for `main_text`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Main,
    Chrome,
}

/// The start tag being read: its name and the attributes `main_text` looks at.
#[derive(Default)]
struct StartTag {
    name: Vec<u8>,
    attribute: Vec<u8>,
    role: Vec<u8>,
    words: Vec<u8>,
}

impl StartTag {
    fn part(&self, in_main: bool) -> Option<Part> {
        let role = self.role.to_ascii_lowercase();
        if MAIN.contains(&self.name.as_slice()) || role == b"main" {
            return Some(Part::Main);
        }
        let chrome_names: &[&[u8]] = if in_main { &CHROME_IN_MAIN } else { &CHROME };
        let words = self.words.to_ascii_lowercase();
        // The document's own elements are never its frame: `<body class="no-sidebar">` named
        // a layout, and read as frame it emptied the whole page.
        let document = matches!(self.name.as_slice(), b"html" | b"body");
        let chrome_word = !in_main
            && !document
            && words
                .split(|&c| c == b' ' || c == b'-' || c == b'_' || c.is_ascii_whitespace())
                .any(|w| CHROME_WORDS.iter().any(|p| w.starts_with(p)));
        (chrome_names.contains(&self.name.as_slice()) || CHROME_ROLES.contains(&role.as_slice()) || chrome_word)
            .then_some(Part::Chrome)
    }
}

/// Most main and frame elements `main_text` keeps open, and most distinct element names it
/// counts: a page beyond either (no real page comes near) is read as if the elements past them
/// were ordinary ones. What `main_text` keeps then grows with the names' length at most, never
/// with the number of elements.
const MAX_OPEN: usize = 10_000;
const MAX_NAMES: usize = 10_000;

/// Element names numbered in order of first sight, the names of the lists above first (so that
/// a page cannot crowd them out); `None` for a new name past MAX_NAMES.
struct Names(std::collections::HashMap<Vec<u8>, u32>);

impl Default for Names {
    fn default() -> Self {
        let mut names = Names(std::collections::HashMap::new());
        for name in MAIN.iter().chain(&CHROME).chain(&BLOCKS) {
            names.number(name);
        }
        names
    }
}

impl Names {
    fn number(&mut self, name: &[u8]) -> Option<u32> {
        if let Some(&id) = self.0.get(name) {
            return Some(id);
        }
        let id = u32::try_from(self.0.len()).ok().filter(|&n| (n as usize) < MAX_NAMES)?;
        self.0.insert(name.to_vec(), id);
        Some(id)
    }

    fn get(&self, name: &[u8]) -> Option<u32> {
        self.0.get(name).copied()
    }
}

/// Elements that never have content or an end tag: they open nothing.
const VOID: [&[u8]; 14] = [
    b"area", b"base", b"br", b"col", b"embed", b"hr", b"img", b"input", b"link", b"meta", b"param", b"source",
    b"track", b"wbr",
];

/// The main content of the HTML document `html`, read as `visible_text` reads a page: the text
/// inside the elements that mark it (`main`, `article`, `role="main"`) without the navigation and
/// asides inside them; a page without such a mark loses instead its frame, the elements a
/// template puts around every page (`head`, `title`, `nav`, `header`, `footer`, `aside`, the ARIA
/// landmark roles of these, and elements other than `html` and `body` whose class or id starts a
/// word with `nav`, `menu`, `sidebar`, `footer`, `header`, `breadcrumb`, `related`, `masthead`,
/// `banner` or `cookie`). So the same article
/// under two sites' templates reads the same. A page whose only text is its frame reads empty.
pub fn main_text(html: &str, check: &mut dyn FnMut()) -> String {
    let mut main = String::new();
    let mut rest = String::new();
    let mut hidden = Hidden::default();
    // How many elements of each name are open (a start tag opens one, an end tag of the name
    // closes one), and the open main and frame elements, innermost last: each with its name,
    // that count when it opened, what it is, and whether it opened inside main content. So a
    // `</div>` closes the main `div` only when it is that div's own end tag. Names are numbered
    // (`Names`), so an element costs a few bytes whatever its name.
    let mut names = Names::default();
    let mut depth: Vec<u32> = Vec::new();
    let mut open: Vec<(u32, u32, Part, bool)> = Vec::new();
    // Where each name's open main and frame elements are in `open`, innermost last: an end tag
    // finds its element there in constant time. (A scan of `open` from the bottom made a page of
    // 80,000 open frame elements quadratic: seconds of CPU for 1.5 MB.)
    let mut open_of_name: Vec<Vec<u32>> = Vec::new();
    let (mut main_depth, mut chrome_depth, mut chrome_in_main) = (0u32, 0u32, 0u32);
    let mut tag = StartTag::default();
    read_events(html, check, |event| {
        match event {
            CallbackEvent::OpenStartTag { name } => {
                if hidden.tag(name, true) == Tag::Block {
                    line_break(&mut main);
                    line_break(&mut rest);
                }
                tag = StartTag { name: name.to_vec(), ..StartTag::default() };
            }
            CallbackEvent::AttributeName { name } => tag.attribute = name.to_ascii_lowercase(),
            CallbackEvent::AttributeValue { value } => match tag.attribute.as_slice() {
                b"role" => tag.role = value.to_vec(),
                b"class" | b"id" => {
                    tag.words.extend_from_slice(value);
                    tag.words.push(b' ');
                }
                _ => {}
            },
            CallbackEvent::CloseStartTag { .. } => {
                let numbered = (!VOID.contains(&tag.name.as_slice()) && !HIDDEN.contains(&tag.name.as_slice()))
                    .then(|| names.number(&tag.name))
                    .flatten();
                if let Some(id) = numbered {
                    let id = id as usize;
                    if id >= depth.len() {
                        depth.resize(id + 1, 0);
                        open_of_name.resize_with(id + 1, Vec::new);
                    }
                    depth[id] += 1;
                    let at = depth[id];
                    // Past MAX_OPEN open main and frame elements, more are read as any other.
                    let part = (open.len() < MAX_OPEN).then(|| tag.part(main_depth > 0)).flatten();
                    if let Some(part) = part {
                        let inside = main_depth > 0;
                        match part {
                            Part::Main => main_depth += 1,
                            Part::Chrome => {
                                chrome_depth += 1;
                                chrome_in_main += u32::from(inside);
                            }
                        }
                        open_of_name[id].push(open.len() as u32);
                        open.push((id as u32, at, part, inside));
                    }
                }
            }
            CallbackEvent::EndTag { name } => {
                let kind = hidden.tag(name, false);
                if kind != Tag::Hidden {
                    if kind == Tag::Block {
                        line_break(&mut main);
                        line_break(&mut rest);
                    }
                    // An end tag closes one element of its name; a main or frame element it
                    // closes goes, with any such element left open inside it.
                    let Some(id) = names.get(name) else { return };
                    let left = match depth.get_mut(id as usize) {
                        Some(count) if *count > 0 => {
                            *count -= 1;
                            *count
                        }
                        _ => return,
                    };
                    // Elements of one name sit in `open` with growing counts (each opened
                    // when the count was higher than for any earlier one still open), so the
                    // first of them opened above `left` is the innermost, if any.
                    let innermost = open_of_name[id as usize].last().map(|&at| at as usize);
                    if let Some(at) = innermost.filter(|&at| open[at].1 > left) {
                        for (n, _, part, inside) in open.drain(at..).rev() {
                            open_of_name[n as usize].pop();
                            match part {
                                Part::Main => main_depth -= 1,
                                Part::Chrome => {
                                    chrome_depth -= 1;
                                    chrome_in_main -= u32::from(inside);
                                }
                            }
                        }
                    }
                }
            }
            CallbackEvent::String { value } if hidden.visible() => {
                let text = String::from_utf8_lossy(value);
                if main_depth > 0 && chrome_in_main == 0 {
                    main.push_str(&text);
                }
                if chrome_depth == 0 {
                    rest.push_str(&text);
                }
            }
            _ => {}
        }
    });
    let mut out = if main.trim().is_empty() { rest } else { main };
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

    fn main(html: &str) -> String {
        main_text(html, &mut || {})
    }

    #[test]
    fn main_content_is_what_the_marks_say() {
        let python = r#"<html><head><title>json — Python</title></head><body>
            <div class="related" role="navigation"><a href="/">index</a> modules</div>
            <div class="document"><div class="body" role="main"><h1>json</h1><p>Encode &amp; decode.</p>
            <nav class="toc">on this page</nav></div></div>
            <div class="sphinxsidebar" role="navigation">Quick search</div><div class="footer">© PSF</div></body></html>"#;
        assert_eq!(main(python).split_whitespace().collect::<Vec<_>>(), ["json", "Encode", "&", "decode."]);
        // No mark: the frame goes (class words, HTML5 elements, roles), the rest stays.
        let postgres = r#"<html><head><title>SELECT</title></head><body><div class="navheader"><table><tr>
            <td><a href="prev.html">Prev</a></td><td>Up</td></tr></table></div>
            <div class="refentry"><h2>SELECT</h2><p>retrieve rows</p></div>
            <header>Site</header><div id="site-footer">Copyright</div></body></html>"#;
        assert_eq!(main(postgres).split_whitespace().collect::<Vec<_>>(), ["SELECT", "retrieve", "rows"]);
        // The same content under the other template reads the same.
        let moved = r#"<body><div class="related" role="navigation">index</div><div role="main"><h1>json</h1>
            <p>Encode &amp; decode.</p></div><div class="footer">x</div></body>"#;
        let words = |t: String| t.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(words(main(moved)), words(main(python)));
        // An article's own header stays; nested and unclosed marks are counted.
        assert_eq!(main("<article><header>Title</header><p>Body</p><aside>ad</aside></article>").split_whitespace().collect::<Vec<_>>(), ["Title", "Body"]);
        assert_eq!(main("<nav><nav>a</nav>b</nav>c"), "c");
        // Inner elements of the same name do not end the main one.
        assert_eq!(main("<div role=main><div>one</div>two</div><div>frame? no: rest</div>").split_whitespace().collect::<Vec<_>>(), ["one", "two"]);
        assert_eq!(main("<div class=navbar><div>links</div>more links</div><p>body</p>").split_whitespace().collect::<Vec<_>>(), ["body"]);
        assert_eq!(main("<main>kept<nav>gone"), "kept");
        assert_eq!(main("<div class=menu>only a frame</div>"), "");
        assert_eq!(main("plain text"), "plain text");
        assert_eq!(main("<main> </main><p>rest</p>").trim(), "rest");
        // The class or id of html and body names the page's layout, never a frame.
        let apache = r#"<html id="menu-page"><body class="no-sidebar"><div id="path">Apache &gt; HTTP Server</div>
            <div id="page-content"><h1>mod_ssl</h1><p>Strong cryptography</p></div></body></html>"#;
        assert_eq!(main(apache).split_whitespace().collect::<Vec<_>>(), ["Apache", ">", "HTTP", "Server", "mod_ssl", "Strong", "cryptography"]);
    }

    #[test]
    fn long_pages_call_check() {
        let page = "<p>x</p>".repeat(10_000);
        let mut calls = 0;
        let got = visible_text(&page, &mut || calls += 1);
        assert!(calls >= 4, "{calls}");
        assert_eq!(got.matches('x').count(), 10_000);
    }

    #[test]
    fn main_text_is_linear_in_open_elements() {
        // Frame elements left open, then 200,000 main elements opened and closed: each end tag
        // used to scan every open element (80,000 took 7.9 s of CPU, issue 51; these would take
        // minutes). Crawled pages are hostile input.
        let n = 200_000;
        let page = "<nav>".repeat(MAX_OPEN / 2) + &"<main>m</main>".repeat(n);
        let mut calls = 0;
        let got = main_text(&page, &mut || calls += 1);
        assert_eq!(got.matches('m').count(), n, "every main element's text, once");
        assert!(calls >= 100, "{calls}");
        // Past MAX_OPEN open frame elements, the rest are read as ordinary ones: still linear,
        // and memory stays bounded.
        let page = "<nav>".repeat(n) + &"<main>m</main>".repeat(n) + &"<a1>".repeat(1000) + &"<b2 class=nav>".repeat(1000);
        assert_eq!(main_text(&page, &mut || {}), "");
        // The same elements closed: the main text comes back.
        let page = "<nav>x".repeat(1000) + &"</nav>".repeat(1000) + &"<main>m</main>".repeat(n);
        let got = main_text(&page, &mut || {});
        assert!(got.matches('m').count() == n && !got.contains('x'), "the frame's text stays out");
    }
}
