//! Golden vectors of pipeline version 1: fixed texts and options with the fingerprints they must
//! always produce. A fingerprint stored today has to equal the one computed after any upgrade
//! (of this crate, jieba-rs, the Unicode crates or Rust); if one of these changes, the change
//! must ship as a new pipeline version instead (docs/ALGORITHM.md). The same vectors are checked
//! through SQL in tests/pg_regress/sql/text.sql.

use simhash_core::fingerprint::simhash;
use simhash_core::feature_table::Budget;
use simhash_core::options::Options;

const GOLDEN: &[(&str, &str, &str)] = &[
    ("今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。", "{}", "46b58b86d69c7ead"),
    ("今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。", "{\"weighting\":\"tf\"}", "44bdcf96c68dfebd"),
    ("今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。", "{\"ngram\":3,\"weighting\":\"binary\"}", "fd85299ff36ef479"),
    ("今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。", "{\"tokenizer\":\"chars\",\"ngram\":3}", "e36ebf5333e8a4fa"),
    ("今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。", "{\"top_k\":5}", "c6f58384f5dc568d"),
    ("今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。", "{\"tokenizer\":\"jieba\",\"case_fold\":false,\"seed\":42}", "9fdd5b7d71453f67"),
    ("今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。", "{\"tokenizer\":\"words\",\"ngram\":2}", "bb8ed53d232e9bdb"),
    ("1998年新年讲话：迈向充满希望的新世纪。中共中央总书记、国家主席江泽民发表新年讲话。", "{}", "74da053de8485330"),
    ("1998年新年讲话：迈向充满希望的新世纪。中共中央总书记、国家主席江泽民发表新年讲话。", "{\"weighting\":\"tf\"}", "f0da053de8415f30"),
    ("1998年新年讲话：迈向充满希望的新世纪。中共中央总书记、国家主席江泽民发表新年讲话。", "{\"ngram\":3,\"weighting\":\"binary\"}", "b9afc79047dfd8ce"),
    ("1998年新年讲话：迈向充满希望的新世纪。中共中央总书记、国家主席江泽民发表新年讲话。", "{\"tokenizer\":\"chars\",\"ngram\":3}", "42c25240cba5315b"),
    ("1998年新年讲话：迈向充满希望的新世纪。中共中央总书记、国家主席江泽民发表新年讲话。", "{\"top_k\":5}", "74cf491fc8495320"),
    ("1998年新年讲话：迈向充满希望的新世纪。中共中央总书记、国家主席江泽民发表新年讲话。", "{\"tokenizer\":\"jieba\",\"case_fold\":false,\"seed\":42}", "863eb0713bc39147"),
    ("1998年新年讲话：迈向充满希望的新世纪。中共中央总书记、国家主席江泽民发表新年讲话。", "{\"tokenizer\":\"words\",\"ngram\":2}", "62eb13456ce3103c"),
    ("PostgreSQL is a powerful, open source object-relational database system with over 35 years of active development.", "{}", "f6778d820191359a"),
    ("PostgreSQL is a powerful, open source object-relational database system with over 35 years of active development.", "{\"weighting\":\"tf\"}", "f6778d820191359a"),
    ("PostgreSQL is a powerful, open source object-relational database system with over 35 years of active development.", "{\"ngram\":3,\"weighting\":\"binary\"}", "0ca4a14852eac096"),
    ("PostgreSQL is a powerful, open source object-relational database system with over 35 years of active development.", "{\"tokenizer\":\"chars\",\"ngram\":3}", "85c8099338ff4298"),
    ("PostgreSQL is a powerful, open source object-relational database system with over 35 years of active development.", "{\"top_k\":5}", "7d6ecd8813d3660b"),
    ("PostgreSQL is a powerful, open source object-relational database system with over 35 years of active development.", "{\"tokenizer\":\"jieba\",\"case_fold\":false,\"seed\":42}", "93c5176dd76e9d99"),
    ("PostgreSQL is a powerful, open source object-relational database system with over 35 years of active development.", "{\"tokenizer\":\"words\",\"ngram\":2}", "63259ace02280f6c"),
    ("The quick brown fox jumps over the lazy dog.", "{}", "860c8692885a92e3"),
    ("The quick brown fox jumps over the lazy dog.", "{\"weighting\":\"tf\"}", "860c8692885a92e3"),
    ("The quick brown fox jumps over the lazy dog.", "{\"ngram\":3,\"weighting\":\"binary\"}", "1ddfc1db808db829"),
    ("The quick brown fox jumps over the lazy dog.", "{\"tokenizer\":\"chars\",\"ngram\":3}", "49bf484ec6fd8e9b"),
    ("The quick brown fox jumps over the lazy dog.", "{\"top_k\":5}", "8609c693895ad2e3"),
    ("The quick brown fox jumps over the lazy dog.", "{\"tokenizer\":\"jieba\",\"case_fold\":false,\"seed\":42}", "c2bf2126038c0101"),
    ("The quick brown fox jumps over the lazy dog.", "{\"tokenizer\":\"words\",\"ngram\":2}", "06bf500272a16782"),
    ("Straße ＡＢＣ café naïve ﬁle Ⅻ", "{}", "4c825094c0277200"),
    ("Straße ＡＢＣ café naïve ﬁle Ⅻ", "{\"weighting\":\"tf\"}", "4c825094c0277200"),
    ("Straße ＡＢＣ café naïve ﬁle Ⅻ", "{\"ngram\":3,\"weighting\":\"binary\"}", "44a100160ae22830"),
    ("Straße ＡＢＣ café naïve ﬁle Ⅻ", "{\"tokenizer\":\"chars\",\"ngram\":3}", "8c014a52d851b048"),
    ("Straße ＡＢＣ café naïve ﬁle Ⅻ", "{\"top_k\":5}", "6c8a59d4e827730c"),
    ("Straße ＡＢＣ café naïve ﬁle Ⅻ", "{\"tokenizer\":\"jieba\",\"case_fold\":false,\"seed\":42}", "5080de736838900b"),
    ("Straße ＡＢＣ café naïve ﬁle Ⅻ", "{\"tokenizer\":\"words\",\"ngram\":2}", "d37b1173b73a5c2e"),
    ("我们在北京大学学习 PostgreSQL 数据库, it's the simhash way! 2024年", "{}", "d929ee2b0d6bb402"),
    ("我们在北京大学学习 PostgreSQL 数据库, it's the simhash way! 2024年", "{\"weighting\":\"tf\"}", "d929de2b0e6bb402"),
    ("我们在北京大学学习 PostgreSQL 数据库, it's the simhash way! 2024年", "{\"ngram\":3,\"weighting\":\"binary\"}", "680693b4d4120d58"),
    ("我们在北京大学学习 PostgreSQL 数据库, it's the simhash way! 2024年", "{\"tokenizer\":\"chars\",\"ngram\":3}", "64dc7e750ddb52bd"),
    ("我们在北京大学学习 PostgreSQL 数据库, it's the simhash way! 2024年", "{\"top_k\":5}", "2929ee6f096bb402"),
    ("我们在北京大学学习 PostgreSQL 数据库, it's the simhash way! 2024年", "{\"tokenizer\":\"jieba\",\"case_fold\":false,\"seed\":42}", "64d036d31b20b1fd"),
    ("我们在北京大学学习 PostgreSQL 数据库, it's the simhash way! 2024年", "{\"tokenizer\":\"words\",\"ngram\":2}", "e1350bc5640d1321"),
    ("", "{}", "0000000000000000"),
    // HTML read as its visible text (step 0): text without tags reads as it is.
    ("The quick brown fox jumps over the lazy dog.", "{\"markup\":\"html\"}", "860c8692885a92e3"),
    (HTML_EN, "{\"markup\":\"html\"}", "9634c78311d2b282"),
    (HTML_EN, "{}", "55d6cf931050a595"),
    (HTML_ZH, "{\"markup\":\"html\"}", "6477019ece88db35"),
    (HTML_ZH, "{\"markup\":\"html\",\"tokenizer\":\"chars\",\"ngram\":2,\"weighting\":\"tf\"}", "f32801633b205a0e"),
    // The main content only: the article of HTML_EN, HTML_ZH without its navigation div.
    (HTML_EN, "{\"markup\":\"html-main\"}", "9626879201d09283"),
    (HTML_ZH, "{\"markup\":\"html-main\"}", "6667819cce88df25"),
];

/// Pages for the markup vectors: a head, a script, a style, comments, entities, inline and block
/// elements, an unclosed tag.
const HTML_EN: &str = "<!DOCTYPE html><html><head><title>PostgreSQL &amp; SimHash</title><style>body{margin:0}</style>\
<script>var nav = '<a href=\"/\">Home</a>';</script></head><body><nav><a href=\"/\">Home</a> | <a href=\"/docs\">Docs</a></nav>\
<!-- main --><article><h1>Near&#45;duplicates</h1><p>PostgreSQL is a <b>powerful</b>, open source object-relational database \
system with over 35 years of active development.<p>The quick brown fox jumps over the lazy dog.</article></body></html>";
const HTML_ZH: &str = "<html><body><div class=\"nav\">首页 &gt; 新闻</div><p>今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。</p>\
<p>1998年新年讲话：迈向充满希望的新世纪&#12290;</p><script>document.write(\"广告\")</script></body></html>";

#[test]
fn pipeline_v1_golden_vectors() {
    let mut wrong = Vec::new();
    for (text, options, expected) in GOLDEN {
        let opts = Options::from_json_str(options).expect("golden options parse");
        let got = format!("{:016x}", simhash(text, &opts, Budget::default(), &mut || {}).unwrap());
        if got != *expected {
            wrong.push(format!("simhash({text:?}, {options}) = {got}, golden {expected}"));
        }
    }
    assert!(wrong.is_empty(), "pipeline v1 changed:\n{}", wrong.join("\n"));
}
