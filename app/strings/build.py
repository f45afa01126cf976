"""The build page (构建): creating knowledge bases, build jobs, documents."""

from . import localized


class ZH:
    TITLE = "构建"

    # --- the quick-create form -----------------------------------------------------------------
    CREATE_TITLE = "快捷创建知识库"
    NAME = "知识库名称"
    NAME_HELP = "只用于区分知识库，例如 java-security 或 等保2.0。"
    FILES = "上传文件（拖放到此处）"
    FILES_HELP = "PDF、Word (.docx)、Markdown、文本、HTML，或每行一篇的 JSONL 语料。"
    FILE_TYPES = ["pdf", "docx", "md", "markdown", "txt", "html", "htm", "jsonl"]
    MODE = "构建模式"
    MODE_GRAPH = "增强知识图谱索引"
    MODE_INDEX = "仅构建知识索引"
    MODE_GRAPH_HELP = "为每块生成问题索引，并抽取实体与关系，建成可在「图谱」页浏览的知识图谱。"
    MODE_INDEX_HELP = "只为每块生成问题索引，构建更快、更省调用；没有实体图谱。"
    MODE_OFFLINE_COST = "离线模式：使用内置启发式方法，0 次大模型调用。"
    MODE_ONLINE_COST = (
        "约 {calls} 次大模型调用（其中 {cached} 次已缓存），约 {tokens} tokens，模型耗时约 {time}。"
    )
    MODE_ONLINE_UNKNOWN = "每块一次大模型调用；点击「估算」查看这些文件的调用次数。"
    ESTIMATE = "估算调用与耗时"
    MODE_EMBED_UNKNOWN = "向量模型 {model} 较慢；点击「估算」查看这些文件的向量化时间。"
    EMBEDDING_COST = "向量化约 {time}（{model}，{texts} 个分块，按双核机器的实测速度）。"
    MINUTES = "{n} 分钟"
    SECONDS = "{n} 秒"
    HOURS = "{n} 小时"
    TAGS = "标签（逗号分隔）"
    TAGS_HELP = "例如：标准, 安全, Java"
    DESCRIPTION = "描述"
    CREATE = "创建并构建"

    NEED_NAME = "请填写知识库名称。"
    NEED_FILES = "请至少上传一个文件，再创建知识库。"
    DUPLICATE_NAME = "已经有一个名为「{name}」的知识库，请换一个名称，或在下方向它添加文档。"
    CREATED = "已创建知识库「{name}」，正在后台构建（可以切换到其他页面，构建不会中断）。"
    CREATED_NONE_READABLE = (
        "已创建知识库「{name}」，但没有一个文件可以读取，每个文件都以失败状态列在文档表里，"
        "附有原因：{error}"
    )

    # --- build jobs ----------------------------------------------------------------------------
    JOBS_TITLE = "构建任务"
    JOB_LABEL = "「{kb}」· {files} 个文件 · {state}"
    STATE_RUNNING = "构建中"
    STATE_DONE = "已完成"
    STATE_FAILED = "失败"
    STATE_CANCELLED = "已取消"
    PROGRESS = "{stage} · {done}/{total} 篇文档 · 已向量化 {embedded}/{queued} 块 · 已索引 {chunks} 块{eta}"
    ETA = " · 按目前速度预计还需 {time}"
    ETA_MEASURING = " · 正在测量速度以估算剩余时间"
    LOG_FULL = "完整日志（{lines} 行）"
    CANCEL = "取消"
    CANCELLING = "正在取消，几秒内停止…"
    DISMISS = "关闭"
    SUMMARY = (
        "新增 {added} 篇 · 替换 {replaced} 篇 · 未变 {skipped} 篇 · 失败 {failed} 篇 · "
        "{chunks} 块 · 用时 {seconds:.1f} 秒"
    )
    FAILED_ITEM = "{source}：{error}"
    FALLBACKS = "{count} 块未能从模型得到可用的知识，仅按原文索引（仍可检索）：{reasons}"
    FALLBACKS_OFFLINE = (
        "{count} 块未能从模型得到可用的知识（{reasons}）：其中 {offline} 块保留了内置抽取器找到的"
        "实体和关系，其余仅按原文索引（仍可检索）"
    )
    REJECTED = "模型回复中有 {count} 处不可用的内容被舍弃：{parts}"
    READY = "知识库「{kb}」已可以使用：到「召回」页提问或检索，试试它能找到什么。"
    READY_GRAPH = "它是图谱模式建的，也可以在「图谱」页浏览实体和关系。"
    TRY_RECALL = "去召回"
    TRY_GRAPH = "看图谱"
    CANCELLED_NOTE = "构建已取消；已建好的文档保留。再次添加相同文件会从中断处继续。"
    CANCELLED_SUMMARY = "已取消：已索引 {indexed} 篇文档（{chunks} 块），剩余 {left} 篇未完成。"
    CANCELLED_LEFT = "可以「继续构建」剩下的文档，或「关闭」放弃它们；已索引的文档都会保留。"
    CANCELLED_ALL = "已取消：已索引 {indexed} 篇文档（{chunks} 块），没有剩下未完成的文档。"
    RESUME = "继续构建"
    BUSY = "知识库「{kb}」正在构建中，请等它完成或先取消，再操作。"
    NOTHING_TO_BUILD = "没有要构建的文件。"

    # A build's stages (core.build.events.STAGES) and the job's own lines
    # (core.build.background.JOB_STAGES), as the job log says them: {step} of {steps} counts the
    # stage's own work (documents, chunks, texts, vectors), {message} is the pipeline's detail
    # (a document's name, why a build paused or failed).
    STAGE_TEXT = {
        "scan": "共有 {steps} 篇文档待处理",
        "parse": "已读取第 {step}/{steps} 篇：{message}",
        "ocr": "OCR 第 {step}/{steps} 页：{message}",
        "vision": "视觉模型已读 {step}/{steps} 页：{message}",
        "entity graph": "正在从 {steps} 个文本块中抽取实体与关系",
        "question index": "正在为 {steps} 个文本块生成问题索引",
        "embedding": "已向量化 {step}/{steps} 条文本",
        "indexing": "已写入 {step}/{steps} 条向量",
        "paused": "大模型服务暂时无法连接，构建已暂停并会自动重试：{message}",
        "resumed": "大模型服务已恢复，构建继续",
        "done": "{steps} 篇文档处理完毕",
        "staged": "已接收 {steps} 个文件",
        "resuming": "服务重启后继续未完成的构建",
        "continuing": "继续构建取消时剩下的 {steps} 篇文档",
        "finished": "构建完成",
        "cancelled": "已取消：已索引 {step} 篇，剩余 {steps} 篇",
        "failed": "构建失败：{message}",
    }
    # The same stages, as the progress bar names what the build is doing now.
    STAGE_NOW = {
        "": "准备中",
        "scan": "扫描文件",
        "parse": "读取文档",
        "ocr": "OCR 第 {step}/{steps} 页",
        "vision": "视觉模型读页 {step}/{steps}",
        "entity graph": "抽取实体与关系",
        "question index": "生成问题索引",
        "embedding": "向量化 {step}/{steps}",
        "indexing": "写入索引",
        "paused": "已暂停",
        "resumed": "继续构建",
        "done": "收尾",
    }

    # --- knowledge bases and their documents ---------------------------------------------------
    KBS_TITLE = "知识库"
    FILTER_TAGS = "按标签筛选"
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
    PICK_KB = "查看知识库"
    DOCS_TITLE = "「{name}」的文档"
    NO_DOCS = "这个知识库还没有文档。"
    DOC_COLUMNS = {
        "source": "文档",
        "kind": "类型",
        "pages": "页数",
        "chunks": "块",
        "status": "状态",
        "error": "错误",
    }
    ADD_FILES = "添加文档"
    ADD = "添加并构建"
    ADD_STARTED = "已开始向「{name}」添加 {count} 个文件。"
    REMOVE_PICK = "移除文档"
    REMOVE = "移除"
    REMOVED = "已移除「{source}」及其所有块和向量。"
    DELETE_TITLE = "删除知识库"
    DELETE_CONFIRM = "我确认删除「{name}」及其全部文档、向量和图谱（不可恢复）"
    DELETE = "删除"
    DELETED = "已删除知识库「{name}」。"

    # --- paused and resumed builds (core.build.pause, core.build.durable) ----------------------
    STATE_PAUSED = "已暂停（等待大模型服务恢复）"

    # --- builds of another process on the same catalog (another instance, a command) ----------
    STATE_INTERRUPTED = "已中断"
    ELSEWHERE = "在另一个进程中运行：{owner}。详细日志留在那个进程里。"
    INTERRUPTED_ELSEWHERE = (
        "运行这个构建的进程（{owner}）已经停止，构建没有完成。已建好的文档保留；"
        "点击「接手继续构建」，由本实例构建剩下的文档。"
    )
    TAKE_OVER = "接手继续构建"


class EN(ZH):
    TITLE = "Build"

    CREATE_TITLE = "Create a knowledge base"
    NAME = "Name"
    NAME_HELP = "Only tells knowledge bases apart, e.g. java-security or mlps-2.0."
    FILES = "Files (drop them here)"
    FILES_HELP = (
        "PDF, Word (.docx), Markdown, text, HTML, or a JSONL corpus with one document a line."
    )
    MODE = "Build mode"
    MODE_GRAPH = "Entity graph and question index"
    MODE_INDEX = "Question index only"
    MODE_GRAPH_HELP = (
        "Generates a question index for every chunk and extracts entities and relations into a"
        " knowledge graph you can browse on the Graph page."
    )
    MODE_INDEX_HELP = (
        "Generates only a question index for every chunk: faster, fewer model calls, no entity"
        " graph."
    )
    MODE_OFFLINE_COST = "Offline mode: built-in heuristics, 0 LLM calls."
    MODE_ONLINE_COST = (
        "About {calls} LLM calls ({cached} of them cached), about {tokens} tokens,"
        " about {time} of model time."
    )
    MODE_ONLINE_UNKNOWN = (
        "One LLM call per chunk; press Estimate to count the calls for these files."
    )
    ESTIMATE = "Estimate calls and time"
    MODE_EMBED_UNKNOWN = (
        "The embedding model {model} is slow; press Estimate to see how long these files take to"
        " embed."
    )
    EMBEDDING_COST = (
        "Embedding takes about {time} ({model}, {texts} chunks, at the speed measured on a"
        " two-core machine)."
    )
    MINUTES = "{n} min"
    SECONDS = "{n} s"
    HOURS = "{n} h"
    TAGS = "Tags (comma-separated)"
    TAGS_HELP = "e.g. standards, security, Java"
    DESCRIPTION = "Description"
    CREATE = "Create and build"

    NEED_NAME = "Please give the knowledge base a name."
    NEED_FILES = "Please upload at least one file before creating the knowledge base."
    DUPLICATE_NAME = (
        "A knowledge base named “{name}” already exists: pick another name, or add documents to"
        " it below."
    )
    CREATED = (
        "Created the knowledge base “{name}”; it is building in the background (you can switch"
        " pages, the build goes on)."
    )
    CREATED_NONE_READABLE = (
        "Created the knowledge base “{name}”, but none of its files could be read; each is"
        " listed in its document table as failed, with the reason: {error}"
    )

    JOBS_TITLE = "Build jobs"
    JOB_LABEL = "“{kb}” · {files} files · {state}"
    STATE_RUNNING = "running"
    STATE_DONE = "done"
    STATE_FAILED = "failed"
    STATE_CANCELLED = "cancelled"
    PROGRESS = (
        "{stage} · {done}/{total} documents · {embedded}/{queued} chunks embedded"
        " · {chunks} chunks indexed{eta}"
    )
    ETA = " · about {time} left at the rate so far"
    ETA_MEASURING = " · measuring the rate to estimate the time left"
    LOG_FULL = "Full log ({lines} lines)"
    CANCEL = "Cancel"
    CANCELLING = "Cancelling: the build stops within seconds…"
    DISMISS = "Dismiss"
    SUMMARY = (
        "{added} added · {replaced} replaced · {skipped} unchanged · {failed} failed · "
        "{chunks} chunks · {seconds:.1f} s"
    )
    FAILED_ITEM = "{source}: {error}"
    FALLBACKS = (
        "{count} chunk(s) got no usable knowledge from the model and are indexed by their text"
        " alone (still searchable): {reasons}"
    )
    FALLBACKS_OFFLINE = (
        "{count} chunk(s) got no usable knowledge from the model ({reasons}): {offline} kept the"
        " entities and relations the built-in extractor found, the rest are indexed by their"
        " text alone (still searchable)"
    )
    REJECTED = "{count} unusable part(s) of the model's replies were dropped: {parts}"
    READY = (
        "The knowledge base “{kb}” is ready: ask or search it on the Recall page and see what it"
        " finds."
    )
    READY_GRAPH = "It was built in graph mode, so you can also browse its entities and relations on the Graph page."
    TRY_RECALL = "Try Recall"
    TRY_GRAPH = "See the graph"
    CANCELLED_NOTE = (
        "The build was cancelled; the documents already built are kept. Adding the same files"
        " again resumes where it stopped."
    )
    BUSY = "The knowledge base “{kb}” is building: wait for it to finish, or cancel it first."
    NOTHING_TO_BUILD = "There are no files to build."
    CANCELLED_SUMMARY = (
        "Cancelled: {indexed} document(s) indexed ({chunks} chunks), {left} left unfinished."
    )
    CANCELLED_LEFT = (
        "Resume to build the documents left, or dismiss to give them up; the indexed documents"
        " stay either way."
    )
    CANCELLED_ALL = (
        "Cancelled: {indexed} document(s) indexed ({chunks} chunks); nothing was left unfinished."
    )
    RESUME = "Resume"

    STAGE_TEXT = {
        "scan": "{steps} documents to process",
        "parse": "Read document {step}/{steps}: {message}",
        "ocr": "OCR page {step}/{steps}: {message}",
        "vision": "Vision model read page {step}/{steps}: {message}",
        "entity graph": "Extracting entities and relations from {steps} chunks",
        "question index": "Generating a question index for {steps} chunks",
        "embedding": "Embedded {step}/{steps} texts",
        "indexing": "Wrote {step}/{steps} vectors to the index",
        "paused": "The LLM service cannot be reached; the build is paused and will retry: {message}",
        "resumed": "The LLM service is back; the build goes on",
        "done": "{steps} documents processed",
        "staged": "Received {steps} files",
        "resuming": "Resuming an unfinished build after a restart",
        "continuing": "Building the {steps} documents a cancel left",
        "finished": "Build finished",
        "cancelled": "Cancelled: {step} documents indexed, {steps} left",
        "failed": "Build failed: {message}",
    }
    STAGE_NOW = {
        "": "starting",
        "scan": "scanning",
        "parse": "parsing",
        "ocr": "OCR page {step}/{steps}",
        "vision": "vision page {step}/{steps}",
        "entity graph": "graph",
        "question index": "questions",
        "embedding": "embedding {step}/{steps}",
        "indexing": "indexing",
        "paused": "paused",
        "resumed": "resumed",
        "done": "finishing",
    }

    KBS_TITLE = "Knowledge bases"
    FILTER_TAGS = "Filter by tag"
    NO_MATCH = "No knowledge base has these tags."
    KB_COLUMNS = {
        "name": "Name",
        "mode": "Mode",
        "tags": "Tags",
        "documents": "Documents",
        "chunks": "Chunks",
        "description": "Description",
    }
    MODE_NAMES = {"graph": "entity graph", "index": "question index"}
    PICK_KB = "Knowledge base"
    DOCS_TITLE = "Documents of “{name}”"
    NO_DOCS = "This knowledge base has no documents yet."
    DOC_COLUMNS = {
        "source": "Document",
        "kind": "Type",
        "pages": "Pages",
        "chunks": "Chunks",
        "status": "Status",
        "error": "Error",
    }
    ADD_FILES = "Add documents"
    ADD = "Add and build"
    ADD_STARTED = "Started adding {count} files to “{name}”."
    REMOVE_PICK = "Remove a document"
    REMOVE = "Remove"
    REMOVED = "Removed “{source}” with all its chunks and vectors."
    DELETE_TITLE = "Delete the knowledge base"
    DELETE_CONFIRM = (
        "I confirm deleting “{name}” with all its documents, vectors and graph (cannot be undone)"
    )
    DELETE = "Delete"
    DELETED = "Deleted the knowledge base “{name}”."

    STATE_PAUSED = "paused (waiting for the LLM service)"

    STATE_INTERRUPTED = "interrupted"
    ELSEWHERE = "Running in another process: {owner}. Its full log stays there."
    INTERRUPTED_ELSEWHERE = (
        "The process that ran this build ({owner}) has stopped before it finished. The documents"
        " it built stay; press “Take over” to build the rest here."
    )
    TAKE_OVER = "Take over"


__getattr__ = localized(ZH, EN)
