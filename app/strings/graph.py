"""The graph page (图谱)."""

from . import localized


class ZH:
    TITLE = "图谱"
    KB = "知识库"
    INDEX_MODE = (
        "知识库「{name}」是用「普通索引」模式建的，没有实体图谱。图谱需要用「增强知识图谱索引」"
        "模式建库。"
    )
    NO_ENTITIES = "知识库「{name}」还没有实体。添加文档并建完索引后，这里会显示实体图谱。"

    TYPES = "实体类型"
    TYPES_HELP = "不选即显示全部类型"
    MIN_DEGREE = "最小度数"
    MIN_DEGREE_HELP = "只显示至少有这么多条关系的实体"
    CAP = "节点上限"
    CAP_HELP = "按度数从高到低取这么多个节点；调高即可展开更多"
    SEARCH = "搜索实体"
    SEARCH_PLACEHOLDER = "实体名或别名，例如 {example}"  # its best-connected entity
    SEARCH_PLACEHOLDER_PLAIN = "实体名或别名"
    HOPS = "跳数（K）"

    STATS = "{entities} 个实体 · {relations} 条关系 · 当前显示 {shown} 个节点、{edges} 条边"
    LEFT_OUT = (
        "按度数显示了前 {shown} 个节点，另有 {left} 个符合条件的节点未显示；"
        "调高「节点上限」可以展开更多。"
    )
    UNKNOWN_ENTITY = "知识库「{kb}」里没有名为「{name}」的实体（按名称和别名查找）。"
    NEIGHBOURHOOD = "「{name}」的 {hops} 跳邻域"
    NOTHING_SHOWN = "没有符合筛选条件的实体。可以放宽实体类型或最小度数。"
    DOWNLOAD = "下载完整图谱（{format}）"
    DOWNLOAD_HELP = (
        "整个知识库的全部实体与关系（不受筛选影响），可用 Gephi、yEd、Cytoscape 或 networkx 打开。"
    )

    NODE = "节点详情"
    NODE_PICK = "选择节点"
    NODE_OPTION = "{name} · {type} · 度 {degree}"
    NODE_TYPE = "类型"
    NODE_DESCRIPTION = "描述"
    NODE_ALIASES = "别名"
    NODE_ATTRIBUTES = "属性"
    NONE = "（无）"
    RELATIONS = "关系"
    NO_RELATIONS = "这个实体还没有关系。"
    COL_RELATION = "关系类型"
    COL_DIRECTION = "方向"
    COL_OTHER = "另一实体"
    OUTGOING = "→ 指向"
    INCOMING = "← 来自"
    CHUNKS = "提及它的文本块"
    CHUNK_LABEL = "{document} · 第 {page} 页 · 块 {ordinal}"
    CHUNK_LABEL_NO_PAGE = "{document} · 第 {line} 行 · 块 {ordinal}"
    CHUNKS_MORE = "共 {total} 个文本块提及它，这里显示前 {shown} 个。"


class EN(ZH):
    TITLE = "Graph"
    KB = "Knowledge base"
    INDEX_MODE = (
        "The knowledge base “{name}” was built in question-index mode and has no entity graph."
        " The graph needs a knowledge base built in entity-graph mode."
    )
    NO_ENTITIES = (
        "The knowledge base “{name}” has no entities yet. Once documents are added and indexed,"
        " its entity graph shows here."
    )

    TYPES = "Entity type"
    TYPES_HELP = "None selected: every type"
    MIN_DEGREE = "Minimum degree"
    MIN_DEGREE_HELP = "Only entities with at least this many relations"
    CAP = "Node cap"
    CAP_HELP = "Takes this many nodes, highest degree first; raise it to expand"
    SEARCH = "Search an entity"
    SEARCH_PLACEHOLDER = "Name or alias, e.g. {example}"
    SEARCH_PLACEHOLDER_PLAIN = "Name or alias"
    HOPS = "Hops (K)"

    DOWNLOAD = "Download the whole graph ({format})"
    DOWNLOAD_HELP = (
        "Every entity and relation of the knowledge base (filters do not apply), for Gephi, yEd,"
        " Cytoscape or networkx."
    )
    STATS = "{entities} entities · {relations} relations · showing {shown} nodes and {edges} edges"
    LEFT_OUT = (
        "Showing the top {shown} nodes by degree; {left} more match but are not shown."
        " Raise the node cap to expand."
    )
    UNKNOWN_ENTITY = (
        "The knowledge base “{kb}” has no entity named “{name}” (looked up by name and alias)."
    )
    NEIGHBOURHOOD = "{hops}-hop neighbourhood of “{name}”"
    NOTHING_SHOWN = (
        "No entity matches the filters. Try fewer entity types or a lower minimum degree."
    )

    NODE = "Node details"
    NODE_PICK = "Pick a node"
    NODE_OPTION = "{name} · {type} · degree {degree}"
    NODE_TYPE = "Type"
    NODE_DESCRIPTION = "Description"
    NODE_ALIASES = "Aliases"
    NODE_ATTRIBUTES = "Attributes"
    NONE = "(none)"
    RELATIONS = "Relations"
    NO_RELATIONS = "This entity has no relations yet."
    COL_RELATION = "Relation"
    COL_DIRECTION = "Direction"
    COL_OTHER = "Other entity"
    OUTGOING = "→ to"
    INCOMING = "← from"
    CHUNKS = "Chunks that mention it"
    CHUNK_LABEL = "{document} · page {page} · chunk {ordinal}"
    CHUNK_LABEL_NO_PAGE = "{document} · line {line} · chunk {ordinal}"
    CHUNKS_MORE = "{total} chunks mention it; the first {shown} are shown."


__getattr__ = localized(ZH, EN)
