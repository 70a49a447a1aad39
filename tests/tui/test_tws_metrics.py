"""The detail tab shows a transformWithState operator's customMetrics (state variables,
timers, TTL) ahead of the state store's own, in a progress event shaped like the sessions
pipeline's gold query reports it under pyspark 4.2."""

from __future__ import annotations

import copy

from streamwatch.model.events import QueryProgress

from conftest import ControlledBackend, load_recording, make_plan, settle, wait_for

TWS_METRICS = {
    "numValueStateVars": 1, "numListStateVars": 1, "numMapStateVars": 0, "numDeletedStateVars": 0,
    "numRegisteredTimers": 57, "numDeletedTimers": 41, "numExpiredTimers": 12,
    "numValueStateWithTTLVars": 1, "numListStateWithTTLVars": 1, "numValuesRemovedDueToTTLExpiry": 0,
    "rocksdbBytesCopied": 120_331, "rocksdbCommitCompactLatency": 0, "rocksdbCommitFileSyncLatencyMs": 31,
    "rocksdbCommitFlushLatency": 12, "rocksdbGetCount": 2_210, "rocksdbPutCount": 1_480,
    "rocksdbSstFileSize": 88_211, "rocksdbTotalBytesRead": 40_122, "rocksdbTotalBytesWritten": 51_310,
}


def test_detail_tab_shows_transform_with_state_custom_metrics(tmp_path):
    from streamwatch.tui.app import StreamwatchApp

    objects = load_recording()
    last = next(o for o in reversed(objects) if isinstance(o, QueryProgress) and o.name == "flights_gold")
    d = copy.deepcopy(last.to_dict())
    d["batchId"] = last.batch_id + 1
    d["stateOperators"] = [{
        "operatorName": "transformWithStateExec", "numRowsTotal": 412, "numRowsUpdated": 97,
        "numRowsRemoved": 35, "numRowsDroppedByWatermark": 0, "allUpdatesTimeMs": 180,
        "allRemovalsTimeMs": 4, "commitTimeMs": 95, "memoryUsedBytes": 301_920, "numShufflePartitions": 2,
        "numStateStoreInstances": 2, "customMetrics": TWS_METRICS}]
    objects.append(QueryProgress.from_dict(d))
    app = StreamwatchApp(ControlledBackend(make_plan(tmp_path), objects), checkpoint_refresh_s=0,
                         clock=lambda: 1767261660000, watch_landing=False)

    async def scenario(pilot):
        await settle(pilot, app)
        await pilot.press("down", "down", "enter")
        await wait_for(pilot, lambda: app.active_tab == "detail", "the detail tab")
        assert app.selected == "flights_gold"
        table = app.query_one("#operators")
        assert table.display
        row = table.get_row("0")
        assert str(row[0]) == "transformWithStateExec"
        custom = str(row[-1])
        assert custom.startswith("numDeletedTimers=41, numExpiredTimers=12, numListStateVars=1, "
                                 "numListStateWithTTLVars=1, numRegisteredTimers=57, numValueStateVars=1")
        assert "numMapStateVars" not in custom  # zero: not shown

    async def main():
        async with app.run_test(size=(160, 48)) as pilot:
            await scenario(pilot)

    import asyncio
    asyncio.run(main())
