"""Every exception maka_es defines, in one hierarchy (raising modules re-export them).

Why: a host decides what to do after a crash from *stable codes*, not from message text. Every
error carries a public ``code`` (its meaning and the host's action are registered in
:mod:`maka_es.codes`, published as ``docs/exceptions.md``) and a machine-readable ``detail``.
Refusals are raised *before* anything is written: catching one never means "maybe half landed".
"""

from __future__ import annotations

from maka_es.errors.base import (
    CommandLineUsageError as CommandLineUsageError,
)
from maka_es.errors.base import (
    MakaError as MakaError,
)
from maka_es.errors.base import (
    MissingExtraError as MissingExtraError,
)
from maka_es.errors.continuation import (
    ContinuationRevalidationError as ContinuationRevalidationError,
)
from maka_es.errors.continuation import (
    ExportReason as ExportReason,
)
from maka_es.errors.continuation import (
    InvalidProviderOutputError as InvalidProviderOutputError,
)
from maka_es.errors.continuation import (
    LineagePark as LineagePark,
)
from maka_es.errors.continuation import (
    ProviderExportError as ProviderExportError,
)
from maka_es.errors.continuation import (
    ProviderScriptExhaustedError as ProviderScriptExhaustedError,
)
from maka_es.errors.continuation import (
    RecoveryStatusConflictError as RecoveryStatusConflictError,
)
from maka_es.errors.continuation import (
    RecoveryStatusUnsupportedError as RecoveryStatusUnsupportedError,
)
from maka_es.errors.continuation import (
    RunEndRefusedError as RunEndRefusedError,
)
from maka_es.errors.continuation import (
    RunForkRefusedError as RunForkRefusedError,
)
from maka_es.errors.continuation import (
    SessionHistoryError as SessionHistoryError,
)
from maka_es.errors.continuation import (
    TurnRefusedError as TurnRefusedError,
)
from maka_es.errors.files import (
    InvalidWorkspaceError as InvalidWorkspaceError,
)
from maka_es.errors.files import (
    InvalidWorkspaceMarkerError as InvalidWorkspaceMarkerError,
)
from maka_es.errors.files import (
    JsonlLedgerError as JsonlLedgerError,
)
from maka_es.errors.files import (
    ReportOutputError as ReportOutputError,
)
from maka_es.errors.files import (
    WorkspaceIdentityChangedError as WorkspaceIdentityChangedError,
)
from maka_es.errors.files import (
    WorkspaceIdentityError as WorkspaceIdentityError,
)
from maka_es.errors.files import (
    WorkspaceIoFailedError as WorkspaceIoFailedError,
)
from maka_es.errors.files import (
    WorkspaceNotFoundError as WorkspaceNotFoundError,
)
from maka_es.errors.files import (
    WorkspacePathRefusedError as WorkspacePathRefusedError,
)
from maka_es.errors.store import (
    ConcurrentWriteError as ConcurrentWriteError,
)
from maka_es.errors.store import (
    ContinuationStartConflictError as ContinuationStartConflictError,
)
from maka_es.errors.store import (
    EventIdConflictError as EventIdConflictError,
)
from maka_es.errors.store import (
    EventIdentityMismatchError as EventIdentityMismatchError,
)
from maka_es.errors.store import (
    HeaderUpdateRefusedError as HeaderUpdateRefusedError,
)
from maka_es.errors.store import (
    InvalidPlanRequestError as InvalidPlanRequestError,
)
from maka_es.errors.store import (
    InvocationSpineConflictError as InvocationSpineConflictError,
)
from maka_es.errors.store import (
    OutcomeUnknownError as OutcomeUnknownError,
)
from maka_es.errors.store import (
    PartialEventRefusedError as PartialEventRefusedError,
)
from maka_es.errors.store import (
    RecoveryBundleRejectedError as RecoveryBundleRejectedError,
)
from maka_es.errors.store import (
    ReservedFactError as ReservedFactError,
)
from maka_es.errors.store import (
    RunAlreadyExistsError as RunAlreadyExistsError,
)
from maka_es.errors.store import (
    RunNotFoundError as RunNotFoundError,
)
from maka_es.errors.store import (
    RunOwnerFencedError as RunOwnerFencedError,
)
from maka_es.errors.store import (
    RunSealedError as RunSealedError,
)
from maka_es.errors.store import (
    RuntimeOffsetMismatchError as RuntimeOffsetMismatchError,
)
from maka_es.errors.store import (
    SessionAlreadyExistsError as SessionAlreadyExistsError,
)
from maka_es.errors.store import (
    SessionNotFoundError as SessionNotFoundError,
)
from maka_es.errors.store import (
    StoreAuthFailedError as StoreAuthFailedError,
)
from maka_es.errors.store import (
    StoreCorruptionError as StoreCorruptionError,
)
from maka_es.errors.store import (
    StoreDatabaseMissingError as StoreDatabaseMissingError,
)
from maka_es.errors.store import (
    StoreFileCorruptionError as StoreFileCorruptionError,
)
from maka_es.errors.store import (
    StoreOutcomeUnknownError as StoreOutcomeUnknownError,
)
from maka_es.errors.store import (
    StorePathError as StorePathError,
)
from maka_es.errors.store import (
    StoreRefusal as StoreRefusal,
)
from maka_es.errors.store import (
    StoreSchemaMissingError as StoreSchemaMissingError,
)
from maka_es.errors.store import (
    StoreUnavailableError as StoreUnavailableError,
)
from maka_es.errors.store import (
    TerminalConflictError as TerminalConflictError,
)
from maka_es.errors.store import (
    ToolAlreadyDispatchedError as ToolAlreadyDispatchedError,
)
from maka_es.errors.store import (
    ToolLedgerCorruptionError as ToolLedgerCorruptionError,
)
from maka_es.errors.store import (
    ToolLedgerRejectionError as ToolLedgerRejectionError,
)
from maka_es.errors.store import (
    ToolOperationConflictError as ToolOperationConflictError,
)
from maka_es.errors.store import (
    ToolOperationNotFoundError as ToolOperationNotFoundError,
)
from maka_es.errors.store import (
    ToolOperationSettledError as ToolOperationSettledError,
)
from maka_es.errors.store import (
    ToolOutcomeConflictError as ToolOutcomeConflictError,
)
from maka_es.errors.store import (
    WritePathRefusedError as WritePathRefusedError,
)
from maka_es.errors.wire import (
    CodecInputError as CodecInputError,
)
from maka_es.errors.wire import (
    InvalidHostConfigError as InvalidHostConfigError,
)
from maka_es.errors.wire import (
    InvalidRunHeaderError as InvalidRunHeaderError,
)
from maka_es.errors.wire import (
    InvalidRuntimeEventError as InvalidRuntimeEventError,
)
from maka_es.errors.wire import (
    NonStrictJsonError as NonStrictJsonError,
)
from maka_es.errors.wire import (
    StrictJsonError as StrictJsonError,
)
