"""The build page (构建): creating knowledge bases, build jobs, documents."""

TITLE = "构建 Build"

# --- the quick-create form ---------------------------------------------------------------------
CREATE_TITLE = "快捷创建知识库 Create a knowledge base"
NAME = "知识库名称 Name"
NAME_HELP = "只用于区分知识库，例如 java-security 或 等保2.0。"
FILES = "上传文件 Files（拖放到此处）"
FILES_HELP = "PDF、Word (.docx)、Markdown、文本、HTML，或每行一篇的 JSONL 语料。"
FILE_TYPES = ["pdf", "docx", "md", "markdown", "txt", "html", "htm", "jsonl"]
MODE = "构建模式 Build mode"
MODE_GRAPH = "增强知识图谱索引 (entity graph)"
MODE_INDEX = "仅构建知识索引 (question index)"
MODE_GRAPH_HELP = "为每块生成问题索引，并抽取实体与关系，建成可在「图谱」页浏览的知识图谱。"
MODE_INDEX_HELP = "只为每块生成问题索引，构建更快、更省调用；没有实体图谱。"
MODE_OFFLINE_COST = "离线模式：使用内置启发式方法，0 次大模型调用。"
MODE_ONLINE_COST = "约 {calls} 次大模型调用（其中 {cached} 次已缓存），约 {tokens} tokens。"
MODE_ONLINE_UNKNOWN = "每块一次大模型调用；点击「估算」查看这些文件的调用次数。"
ESTIMATE = "估算调用与耗时 Estimate"
MODE_EMBED_UNKNOWN = "向量模型 {model} 较慢；点击「估算」查看这些文件的向量化时间。"
EMBEDDING_COST = "向量化约 {time}（{model}，{texts} 个分块，按双核机器的实测速度）。"
MINUTES = "{n} 分钟"
SECONDS = "{n} 秒"
HOURS = "{n} 小时"
TAGS = "标签 Tags（逗号分隔）"
TAGS_HELP = "例如：标准, 安全, Java"
DESCRIPTION = "描述 Description"
CREATE = "创建并构建 Create and build"

NEED_NAME = "请填写知识库名称。"
NEED_FILES = "请至少上传一个文件，再创建知识库。"
DUPLICATE_NAME = "已经有一个名为「{name}」的知识库，请换一个名称，或在下方向它添加文档。"
CREATED = "已创建知识库「{name}」，正在后台构建（可以切换到其他页面，构建不会中断）。"

# --- build jobs ---------------------------------------------------------------------------------
JOBS_TITLE = "构建任务 Build jobs"
JOB_LABEL = "「{kb}」· {files} 个文件 · {state}"
STATE_RUNNING = "构建中 running"
STATE_DONE = "已完成 done"
STATE_FAILED = "失败 failed"
STATE_CANCELLED = "已取消 cancelled"
PROGRESS = "{done}/{total} 篇文档 · {chunks} 块{eta}"
ETA = " · 预计还需 {seconds:.0f} 秒"
LOG_FULL = "完整日志 Full log ({lines} 行)"
CANCEL = "取消 Cancel"
CANCELLING = "正在取消，当前文档处理完就停止…"
DISMISS = "关闭 Dismiss"
SUMMARY = (
    "新增 {added} 篇 · 替换 {replaced} 篇 · 未变 {skipped} 篇 · 失败 {failed} 篇 · "
    "{chunks} 块 · 用时 {seconds:.1f} 秒"
)
FAILED_ITEM = "{source}：{error}"
FALLBACKS = (
    "{count} 块未能从模型得到可用的知识，仅按原文索引（仍可检索）："
    " {count} chunk(s) got no usable knowledge from the model and are indexed by their text"
    " alone (still searchable): {reasons}"
)
REJECTED = (
    "模型回复中有 {count} 处不可用的内容被舍弃 {count} unusable part(s) of the model's replies"
    " were dropped: {parts}"
)
CANCELLED_NOTE = "构建已取消；已建好的文档保留。再次添加相同文件会从中断处继续。"
BUSY = "知识库「{kb}」正在构建中，请等它完成或先取消，再操作。"
NOTHING_TO_BUILD = "没有要构建的文件。"

LOG_STAGED = "已接收 {count} 个文件"
LOG_FINISHED = "构建完成"
LOG_CANCELLED = "已取消"
LOG_FAILED = "构建失败：{error}"
LOG_STAGE_JOB = "job"

# --- knowledge bases and their documents -------------------------------------------------------
KBS_TITLE = "知识库 Knowledge bases"
FILTER_TAGS = "按标签筛选 Filter by tag"
NO_MATCH = "没有带这些标签的知识库。"
KB_COLUMNS = {
    "name": "名称",
    "mode": "模式",
    "tags": "标签",
    "documents": "文档",
    "chunks": "块",
    "description": "描述",
}
MODE_NAMES = {"graph": "知识图谱", "index": "知识索引"}
PICK_KB = "查看知识库 Knowledge base"
DOCS_TITLE = "「{name}」的文档 Documents"
NO_DOCS = "这个知识库还没有文档。"
DOC_COLUMNS = {
    "source": "文档",
    "kind": "类型",
    "pages": "页数",
    "chunks": "块",
    "status": "状态",
    "error": "错误",
}
ADD_FILES = "添加文档 Add documents"
ADD = "添加并构建 Add and build"
ADD_STARTED = "已开始向「{name}」添加 {count} 个文件。"
REMOVE_PICK = "移除文档 Remove a document"
REMOVE = "移除 Remove"
REMOVED = "已移除「{source}」及其所有块和向量。"
DELETE_TITLE = "删除知识库 Delete the knowledge base"
DELETE_CONFIRM = "我确认删除「{name}」及其全部文档、向量和图谱（不可恢复）"
DELETE = "删除 Delete"
DELETED = "已删除知识库「{name}」。"

# --- paused and resumed builds (core.build.pause, core.build.durable) -----------------------------
STATE_PAUSED = "已暂停 paused（等待大模型服务恢复）"
LOG_RESUMING = "服务重启后继续未完成的构建"
PAUSED_NOTE = (
    "大模型服务暂时无法连接，构建已暂停并会自动重试；服务恢复后继续。可以取消，稍后再继续。"
)
