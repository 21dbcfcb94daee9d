"""Data: schemas, feature sets, analysis metadata and data sets."""

from tensorfx._errors import DataError
from tensorfx.data._csv import CsvDataSet
from tensorfx.data._csv import CsvDataSource
from tensorfx.data._dataframe import DataFrameDataSet
from tensorfx.data._dataframe import DataFrameDataSource
from tensorfx.data._dataset import DataSet
from tensorfx.data._dataset import DataSource
from tensorfx.data._examples import ExamplesDataSet
from tensorfx.data._examples import ExamplesDataSource
from tensorfx.data._feature import Feature
from tensorfx.data._featureset import FeatureSet
from tensorfx.data._featuretypes import FeatureType
from tensorfx.data._metadata import Metadata
from tensorfx.data._parquet import ParquetDataSet
from tensorfx.data._parquet import ParquetDataSource
from tensorfx.data._protoformat import ProtoFormat
from tensorfx.data._protos import ProtoDataSet
from tensorfx.data._protos import ProtoDataSource
from tensorfx.data._schema import Schema
from tensorfx.data._schema import SchemaField
from tensorfx.data._schema import SchemaFieldType
from tensorfx.data._transforms import TransformedFeature

__all__ = [
  'CsvDataSet',
  'CsvDataSource',
  'DataError',
  'DataFrameDataSet',
  'DataFrameDataSource',
  'DataSet',
  'DataSource',
  'ExamplesDataSet',
  'ExamplesDataSource',
  'Feature',
  'FeatureSet',
  'FeatureType',
  'Metadata',
  'ProtoDataSet',
  'ProtoDataSource',
  'ProtoFormat',
  'ParquetDataSet',
  'ParquetDataSource',
  'Schema',
  'SchemaField',
  'SchemaFieldType',
  'TransformedFeature',
]
