from zhixing.core.search.fusion import RRF_K, fuse_strategies, fusion_params, reciprocal_rank_fusion


def test_rrf_uses_one_based_ranks_with_k_60():
    fused = reciprocal_rank_fusion({"basic": ["a", "b"]})
    assert RRF_K == 60
    assert fused[0].item == "a"
    assert fused[0].score == 1 / 61
    assert fused[1].score == 1 / 62


def test_rrf_prefers_hits_ranked_high_in_several_lists():
    fused = reciprocal_rank_fusion(
        {"basic": ["a", "b", "c"], "keyword": ["c", "b", "d"], "hyde": ["b"]}
    )
    assert [f.item for f in fused][:2] == ["b", "c"]
    b = fused[0]
    assert b.ranks == {"basic": 2, "keyword": 2, "hyde": 1}
    assert b.score == 1 / 62 + 1 / 62 + 1 / 61


def test_rrf_counts_an_item_once_per_list_at_its_best_rank():
    fused = reciprocal_rank_fusion({"basic": ["a", "a", "b"]})
    assert fused[0].ranks == {"basic": 1}
    assert fused[0].score == 1 / 61
    assert fused[1].ranks == {"basic": 3}


def test_rrf_breaks_ties_by_first_appearance():
    fused = reciprocal_rank_fusion({"basic": ["x", "y"], "keyword": ["y", "x"]})
    assert [f.item for f in fused] == ["x", "y"]
    assert fused[0].score == fused[1].score


def test_rrf_of_no_lists_is_empty():
    assert reciprocal_rank_fusion({}) == []
    assert reciprocal_rank_fusion({"basic": []}) == []


def test_expansions_vote_once_so_correlated_rewrites_cannot_outvote_the_direct_searches():
    from zhixing.core.search.fusion import fuse_strategies

    # Four expansions agree on "x"; basic and keyword agree on "a".
    ranked = {
        "basic": ["a", "x"],
        "keyword": ["a", "y"],
        "hyde": ["x"],
        "split": ["x"],
        "generalize": ["x"],
        "graph": ["x", "a"],
    }
    flat = reciprocal_rank_fusion(ranked)
    assert flat[0].item == "x"  # flat RRF: the correlated rewrites win
    for match in (None, 0.0, 0.4, 1.0):
        fused = fuse_strategies(ranked, match=match)
        assert fused[0].item == "a", match
        assert fused[0].ranks == {"basic": 1, "keyword": 1, "graph": 2}  # every list's rank


# --- the weights, on constructed queries: behaviour, not tuned numbers ----------------------

DENSE = [f"d{i}" for i in range(10)]
BM25 = [f"k{i}" for i in range(10)]


def _top(fused, n=5):
    return [f.item for f in fused[:n]]


def test_a_cross_lingual_query_follows_the_dense_list():
    """An English question over Chinese passages: BM25 matched only a loanword (match near 0,
    hits in the other script), so its list, which shares nothing with dense's, must not push
    dense's hits down; nor where it matched next to nothing in the question's own script."""
    from zhixing.core.search.fusion import fuse_strategies, list_weights

    weights = list_weights({"basic": DENSE, "keyword": BM25}, match=0.05, agreement=0.1)
    assert weights == {"basic": 1.0, "keyword": 0.0}
    fused = fuse_strategies({"basic": DENSE, "keyword": BM25}, match=0.05, agreement=0.1)
    assert _top(fused, 10) == DENSE
    weights = list_weights({"basic": DENSE, "keyword": BM25}, match=0.02, agreement=1.0)
    assert weights["basic"] > 5 * weights["keyword"]
    assert _top(fuse_strategies({"basic": DENSE, "keyword": BM25}, match=0.02)) == DENSE[:5]


def test_an_extractive_query_follows_bm25_and_dense_only_follows():
    from zhixing.core.search.fusion import fuse_strategies

    fused = fuse_strategies({"basic": DENSE, "keyword": BM25}, match=1.0)
    assert _top(fused, 10) == BM25


def test_the_weights_move_monotonically_with_the_match():
    from zhixing.core.search.fusion import list_weights

    lists = {"basic": DENSE, "keyword": BM25}
    seen = [list_weights(lists, match=m) for m in (0.0, 0.1, 0.3, 0.6, 1.0)]
    keyword = [w["keyword"] for w in seen]
    dense = [w["basic"] for w in seen]
    assert keyword == sorted(keyword) and keyword[0] == 0.0 and keyword[-1] == 1.0
    assert dense == sorted(dense, reverse=True) and dense[0] == 1.0
    assert all(0.0 <= w <= 1.0 for w in keyword + dense)


def test_a_list_that_shares_nothing_with_the_others_still_adds_its_hits():
    """A disjoint list is not punished for disagreeing: it may be the only right one. It adds
    its candidates below the agreeing lists' shared hits and above nothing."""
    from zhixing.core.search.fusion import fuse_strategies

    shared = ["a", "b", "c"]
    alone = ["z1", "z2", "z3"]
    fused = fuse_strategies({"basic": shared, "keyword": shared, "hyde": alone}, match=0.4)
    items = [f.item for f in fused]
    assert items[:3] == shared and set(alone) <= set(items)


def test_an_empty_list_weighs_nothing_and_changes_nothing():
    from zhixing.core.search.fusion import fuse_strategies, list_weights

    assert list_weights({"basic": [], "keyword": BM25}, match=0.2)["basic"] == 0.0
    with_empty = fuse_strategies({"basic": DENSE, "keyword": BM25, "split": []}, match=0.3)
    without = fuse_strategies({"basic": DENSE, "keyword": BM25}, match=0.3)
    assert [(f.item, f.score) for f in with_empty] == [(f.item, f.score) for f in without]
    # BM25 came back empty: the dense list alone decides, whatever the match says.
    fused = fuse_strategies({"basic": DENSE, "keyword": []}, match=0.9)
    assert _top(fused, 10) == DENSE


def test_one_strong_list_and_five_noise_lists():
    """BM25 matched the whole question; dense and four expansions return unrelated chunks
    (each its own noise). The strong list's top five stay the fusion's top five."""
    from zhixing.core.search.fusion import fuse_strategies

    noise = {
        name: [f"{name}{i}" for i in range(20)]
        for name in ("basic", "hyde", "split", "generalize", "graph")
    }
    fused = fuse_strategies({**noise, "keyword": BM25}, match=1.0)
    assert _top(fused) == BM25[:5]
    # ...and the same holds when the five noise lists all agree on the same wrong chunks.
    same = {name: [f"n{i}" for i in range(20)] for name in noise}
    assert _top(fuse_strategies({**same, "keyword": BM25}, match=1.0)) == BM25[:5]


def test_a_query_with_no_measured_match_fuses_the_direct_lists_alike():
    from zhixing.core.search.fusion import list_weights

    assert list_weights({"basic": DENSE, "keyword": BM25}) == {"basic": 1.0, "keyword": 1.0}


def test_only_zero_weight_lists_still_give_a_ranking():
    from zhixing.core.search.fusion import fuse_strategies

    assert _top(fuse_strategies({"keyword": BM25}, match=0.0), 10) == BM25


def test_a_document_the_question_names_votes_like_a_direct_search():
    from zhixing.core.search.fusion import fuse_strategies

    ranked = {"basic": ["a", "b", "n"], "keyword": ["b", "a", "n"]}
    assert fuse_strategies(ranked, match=0.6)[0].item in ("a", "b")
    fused = fuse_strategies(ranked, named=["n"], match=0.6)
    assert fused[0].item == "n" and fused[0].ranks["keyword"] == 3
    # The title link belongs to keyword: without keyword asked for, it does not vote.
    assert fuse_strategies({"basic": ["a", "n"]}, named=["n"])[0].item == "a"


def test_weighted_rrf_scales_each_list():
    fused = reciprocal_rank_fusion({"a": ["x"], "b": ["y"]}, weights={"a": 1.0, "b": 0.5})
    assert [f.item for f in fused] == ["x", "y"] and fused[1].score == 0.5 / 61


# --- the match signal (core/search/signals.py) ------------------------------------------------


def test_the_match_of_an_english_question_over_chinese_passages_is_near_zero():
    from zhixing.core.search.signals import keyword_match

    question = "Verify that TLS is used for all client connectivity"
    passages = ["验证所有客户端连接都使用 TLS，并且不会回退到不安全或未加密的通信。"] * 3
    assert keyword_match(question, passages) < 0.1


def test_the_match_grows_with_the_share_of_the_question_the_hits_contain():
    from zhixing.core.search.signals import keyword_match
    from zhixing.core.store.analysis import bm25_text

    question = "Which magazine was started first, Arthur's Magazine or First for Women?"
    full = bm25_text(
        "Arthur's Magazine was an American literary periodical started first; First for Women"
    )
    part = bm25_text("Arthur's Magazine was an American literary periodical")
    none = bm25_text("The river flows north through the valley")
    assert keyword_match(question, [full]) == 1.0
    assert 0.0 < keyword_match(question, [part]) < 1.0
    assert keyword_match(question, [none]) == 0.0
    assert keyword_match(question, []) == 0.0


def test_chinese_questions_match_by_content_bigrams_not_question_words():
    from zhixing.core.search.signals import keyword_match, query_terms

    terms = query_terms("红楼梦的作者是谁？")
    assert "红楼" in terms and "作者" in terms
    assert not any(ch in t for t in terms for ch in "的是谁")
    assert keyword_match("红楼梦的作者是谁？", ["《红楼梦》作者曹雪芹，清代小说家。"]) == 1.0


def test_a_stronger_dense_model_keeps_a_vote_where_bm25_matched_the_question():
    ranked = {"keyword": ["a", "b", "c"], "basic": ["d", "a", "e"]}
    default = [f.item for f in fuse_strategies(ranked, match=1.0, params=fusion_params("builtin"))]
    stronger = [
        f.item for f in fuse_strategies(ranked, match=1.0, params=fusion_params("e5-small"))
    ]
    assert "d" not in default  # the default model's dense list only breaks ties there
    assert default[:3] == ["a", "b", "c"]
    assert stronger[0] == "a" and "d" in stronger  # agreed first, dense's own find kept
    assert fusion_params("openai:bge-m3") == fusion_params("builtin")  # unknown: the default


def test_bm25_hits_in_another_script_vote_nothing_even_where_acronyms_matched():
    """An English question whose acronym BM25 found in Chinese passages (agreement low): a
    list that agrees with dense on the wrong items must not reorder dense's top (with RRF's
    k = 60 even a small vote for dense's second item would put it first)."""
    from zhixing.core.search.fusion import OTHER_SCRIPT, fuse_strategies, list_weights

    dense = ["right", "near", "d2", "d3", "d4", "d5"]
    bm25 = ["near", "d5", "k2"]  # the acronym's other passages
    weights = list_weights({"basic": dense, "keyword": bm25}, match=0.2, agreement=0.1)
    assert weights == {"basic": 1.0, "keyword": 0.0}
    fused = fuse_strategies({"basic": dense, "keyword": bm25}, match=0.2, agreement=0.1)
    assert _top(fused, 6) == dense
    # The same lists with the hits in the question's script: BM25 votes again.
    same = fuse_strategies({"basic": dense, "keyword": bm25}, match=0.2, agreement=1.0)
    assert same[0].item == "near"
    edge = list_weights({"basic": dense, "keyword": bm25}, match=0.5, agreement=OTHER_SCRIPT)
    assert edge["keyword"] > 0


def _fused(items):
    from zhixing.core.search.fusion import Fused

    return [
        Fused(item, score=1 / (61 + n), ranks={"keyword": n + 1}) for n, item in enumerate(items)
    ]


def test_the_document_the_top_hit_names_takes_rank_five():
    from zhixing.core.search.fusion import link_at

    fused = _fused(["a", "b", "c", "d", "e", "f", "g"])
    linked = link_at(fused, ["x"])
    assert [f.item for f in linked] == ["a", "b", "c", "d", "x", "e", "f", "g"]
    assert linked[4].ranks == {"link": 1}
    # Already in the first five, or deeper: no duplicate, and it still moves up to five.
    assert [f.item for f in link_at(fused, ["c"])] == [f.item for f in fused]
    assert [f.item for f in link_at(fused, ["g"])] == ["a", "b", "c", "d", "g", "e", "f"]
    # The first link not taken is used; the question's own title links are left to it.
    assert [f.item for f in link_at(fused, ["b", "q", "y"], avoid=["q"])][4] == "y"
    # A short list gets the link at its end; an empty one or no link changes nothing.
    assert [f.item for f in link_at(_fused(["a", "b"]), ["x"])] == ["a", "b", "x"]
    assert link_at([], ["x"]) == [] and [f.item for f in link_at(fused, [])] == list("abcdefg")


def test_a_link_to_a_document_already_in_the_top_five_counts_by_document():
    from zhixing.core.search.fusion import link_at

    document = {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "lead2": 2, "lead6": 6}.get
    fused = _fused(["a", "b", "c", "d", "e", "f"])
    assert [f.item for f in link_at(fused, ["lead2"], document=document)] == list("abcdef")
    # Another chunk of a document that sits at rank 6 replaces it instead of repeating it.
    moved = [f.item for f in link_at(fused, ["lead6"], document=document)]
    assert moved == [*"abcd", "lead6", "e"]
