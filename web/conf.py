"""Sphinx configuration of the web edition (`make book`; bookkit/web.py stages the pages and runs
Sphinx once per language with `-D language=zh_CN` or `-D language=en`).

The pages are the executed notebooks of notebooks/{zh,en}/ (nothing is executed here), rendered by
MyST-NB with the Sphinx Book Theme. Every page works opened from disk with no network: the theme
ships its fonts and icons, MathJax is copied from the `sphinx-mathjax-offline` package, and the
Chinese search index is split into words by jieba.
"""

from __future__ import annotations

import logging

try:  # Sphinx splits Chinese text into words with jieba; keep its start-up chatter out of the log
    import jieba

    jieba.setLogLevel(logging.WARNING)
except ImportError:
    pass

project = "mytorch"
author = "the mytorch authors"
copyright = "the mytorch authors"  # noqa: A001 - Sphinx's name

extensions = ["myst_nb"]
nb_execution_mode = "off"  # the notebooks are stored executed (`make colab`)
nb_output_stderr = "show"
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header", "mystnb.unknown_mime_type"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

html_theme = "sphinx_book_theme"
html_static_path = ["_static"]
templates_path = ["_templates"]
html_css_files = ["book.css"]
html_copy_source = False
html_show_sourcelink = False
html_last_updated_fmt = None
html_theme_options = {
    "repository_url": "https://github.com/mytorch-book/mytorch",  # -D from [tool.bookkit] repo
    "use_repository_button": True,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "article_header_end": ["lang-switch.html", "article-header-buttons.html"],
    "show_toc_level": 2,
    "navigation_with_keys": False,
}
mathjax_path = "mathjax/tex-chtml.js"  # bookkit.web copies MathJax into _static/mathjax/

# bookkit.web sets per language: -D language, -D html_title, -A other_lang, -A other_lang_label.
html_title = "mytorch"


def _other_language_page(app, pagename, templatename, context, doctree) -> None:  # noqa: ARG001
    """The same page in the other language's build (../zh/… or ../en/…), for the switch."""
    depth = pagename.count("/")
    other = context.get("other_lang")
    if other:
        context["other_lang_url"] = "../" * (depth + 1) + f"{other}/{pagename}.html"


# The reader's query, cut into words the way the index was. Sphinx cuts the pages' Chinese text into
# words with jieba (自动求导 → 自动, 求导) but the browser's default splitter keeps a run of Chinese
# characters whole, so 自动求导 or 反向传播 found nothing. This splitter cuts each run of Chinese
# characters by longest match against the words the index holds (the same words jieba produced);
# a single character the index does not hold is dropped, as the index drops single characters.
ZH_QUERY_SPLITTER = r"""
var splitQuery = (query) => {
  const index = (typeof Search === "undefined" ? null : Search._index) || {};
  const terms = index.terms || {};
  const titles = index.titleterms || {};
  const known = (word) => Object.hasOwn(terms, word) || Object.hasOwn(titles, word);
  const words = [];
  for (const part of query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)) {
    for (const run of part.split(/(\p{Script=Han}+)/u)) {
      if (!run) continue;
      if (!/\p{Script=Han}/u.test(run)) { words.push(run); continue; }
      let start = 0;
      while (start < run.length) {
        let end = Math.min(run.length, start + 12);
        while (end - start > 1 && !known(run.slice(start, end))) end -= 1;
        const word = run.slice(start, end);
        if (word.length > 1 || known(word)) words.push(word);
        start = end;
      }
    }
  }
  return words;
};
"""


def _chinese_search_works() -> None:
    """Chinese search that finds compound words (ZH_QUERY_SPLITTER). Also: Sphinx 9.0's Chinese
    search ships the English stemmer but names it ChineseStemmer, so the search page stops with
    "ChineseStemmer is not defined" (Sphinx issue 14229, fixed by PR 14416 in a later release): name
    it after the stemmer it ships."""
    from sphinx.search import languages
    from sphinx.search.zh import SearchChinese

    name = SearchChinese.language_name
    if SearchChinese.js_stemmer_rawcode == "english-stemmer.js" and name == "Chinese":
        name = "English"
    languages["zh"] = type("SearchChinese", (SearchChinese,),
                           {"language_name": name, "js_splitter_code": ZH_QUERY_SPLITTER})


def setup(app) -> dict:
    _chinese_search_works()
    app.connect("html-page-context", _other_language_page)
    return {"parallel_read_safe": True}
